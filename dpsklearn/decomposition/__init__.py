"""Private PCA and standardisation from released sufficient statistics.

Modules: ``_pca.py`` (:class:`PrivatePCA`, :class:`PrivateStandardScaler`).
"""

from ._pca import PrivatePCA, PrivateStandardScaler

__all__ = ["PrivatePCA", "PrivateStandardScaler"]
