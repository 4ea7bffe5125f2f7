"""Public schemas and feature maps fixed before the private rows are read.

Modules: ``_schema.py`` (:class:`PublicSchema`, :func:`resolve_columns`),
``_additive_map.py`` (:class:`AdditiveFeatureMap`, :func:`auto_n_bins`).
"""

from ._additive_map import AdditiveFeatureMap, auto_n_bins
from ._schema import (
    PublicSchema,
    TabularInputMixin,
    column_values,
    is_missing,
    resolve_classes,
    resolve_columns,
)

__all__ = [
    "AdditiveFeatureMap",
    "PublicSchema",
]
