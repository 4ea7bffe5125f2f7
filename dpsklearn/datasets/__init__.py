"""Datasets bundled with dpsklearn, loadable with no network access."""

from ._adult import load_adult

__all__ = ["load_adult"]
