"""Teachers for the Dask cluster tests, importable on the cluster's processes.

``.ci/run`` puts ``tests/`` on the path of the scheduler and workers it
starts, as a user's own estimator classes must be importable on a cluster;
this module holds only such classes (no test logic runs on import).
"""

from __future__ import annotations

import numpy as np
from sklearn.tree import DecisionTreeClassifier


class RowRecordingTree(DecisionTreeClassifier):
    """A tree that keeps the row ids (column 0 of ``X``) it was fitted on."""

    def fit(self, X, y, sample_weight=None, check_input=True):
        self.rows_seen_ = np.asarray(X)[:, 0].astype(np.int64).copy()
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)
