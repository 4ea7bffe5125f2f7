"""
A DataFrame through a ColumnTransformer, and a grid search that shows abstentions
=================================================================================

The Adult census table has eight string columns. Each teacher gets the
DataFrame rows of its shard as they are and one-hot encodes them itself, in
a ``ColumnTransformer`` inside the teacher, so what the encoder learns (the
categories present in its shard) stays inside the guarantee like the rest
of the teacher.

``GridSearchCV`` over ``epsilon`` then shows the privacy-utility trade-off.
A model that abstains scores its abstentions as answers (``score`` warns),
so a search can look flat for the wrong reason; the scorer of
:func:`dpsklearn.metrics.make_abstention_scorer` puts the answered fraction
beside the score. The validation rows' true labels are used in the clear:
this search is outside the guarantee unless they are public (here they
stand for public data).
"""

# %%
# The data: a DataFrame of strings and numbers
# --------------------------------------------
# 4,000 rows of the Adult training file, with the categorical columns as
# plain strings, as a CSV reader would give them. The label set is public.

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from dpsklearn import SubsampleAggregateClassifier
from dpsklearn.datasets import load_adult
from dpsklearn.metrics import make_abstention_scorer

adult = load_adult(as_frame=True)
rows = np.random.default_rng(0).choice(len(adult.target), 4000, replace=False)
X = adult.data.iloc[rows].reset_index(drop=True)
strings = [adult.feature_names[j] for j in adult.categorical_features]
numbers = [name for name in adult.feature_names if name not in strings]
for name in strings:
    X[name] = X[name].astype(str).astype(object)
y = np.asarray(adult.target)[rows].astype(str)
print(X[strings[:3] + numbers[:2]].head(3))

# %%
# The teacher reads the DataFrame
# -------------------------------
# ``handle_unknown="ignore"``: a shard of a few dozen rows misses rare
# categories, and a query holding one must not make its teacher fail.

# Confident-GNMax (``mechanism="confident_gnmax"``) suits a few dozen
# teachers; it abstains on the queries the teachers do not clearly agree
# on, and charges every one of ``max_queries`` threshold checks.

teacher = make_pipeline(
    make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), strings),
        (StandardScaler(), numbers),
    ),
    LogisticRegression(solver="liblinear"),
)
model = SubsampleAggregateClassifier(
    teacher,
    n_estimators=80,
    delta=1e-5,
    mechanism="confident_gnmax",
    max_queries=2000,
    classes=["<=50K", ">50K"],  # abstentions answer abstain_label_ = "abstain"
    random_state=0,
)

# %%
# The search, with the answered fraction beside the score
# -------------------------------------------------------
# One ``predict`` per fold gives the three columns: the score over all rows
# (abstentions count as wrong), the fraction answered, and the accuracy on
# the answered rows.

search = GridSearchCV(
    model,
    {"epsilon": [1.0, 4.0, 16.0]},
    cv=2,
    scoring=make_abstention_scorer(),
    refit="score",
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # e.g. delta vs 1/n
    search.fit(X, y)
results = search.cv_results_
epsilons = np.asarray(results["param_epsilon"], dtype=float)
for eps, score, answered, on_answered in zip(
    epsilons,
    results["mean_test_score"],
    results["mean_test_answered"],
    results["mean_test_score_answered"],
    strict=True,
):
    print(
        f"epsilon {eps:6g}: score {score:.3f}, answered {answered:.1%}, "
        f"accuracy on answered rows {on_answered:.3f}"
    )

# %%
# The picture
# -----------
# Confident-GNMax answers a query only when its largest vote count, plus
# noise, clears a threshold. With 80 teachers and a small budget the noise
# is large: few queries are answered, so the score over all rows is low
# mostly because of abstentions; the answered fraction says so, and the
# accuracy on answered rows says how good the answers that were given are.

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogx(epsilons, results["mean_test_score"], "o-", label="score (all rows)")
ax.semilogx(epsilons, results["mean_test_answered"], "s--", label="answered")
ax.semilogx(
    epsilons, results["mean_test_score_answered"], "^:", label="accuracy (answered)"
)
ax.set_xlabel("epsilon")
ax.set_ylim(0, 1.02)
ax.legend(loc="lower right")
ax.set_title("GridSearchCV over epsilon, Adult DataFrame, k = 80")
fig.tight_layout()
plt.show()
