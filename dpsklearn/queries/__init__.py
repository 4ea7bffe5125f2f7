"""A private statistical-query oracle on disjoint chunks (Chan's notes, Theorem 1)."""

from ._statistical_queries import PrivateStatisticalQueries

__all__ = ["PrivateStatisticalQueries"]
