r"""Noise generators for one fit, and fresh entropy for copies.

Mechanism noise comes from its own numpy ``Generator``\ s, seeded from OS
entropy at every ``fit`` unless ``noise_random_state`` is set (for tests and
experiments only, with a :class:`~dpsklearn.PrivacyLeakWarning`). A copy of
a fitted model (pickle, deepcopy, a joblib worker) must not replay the
original's noise, or anyone could subtract it: a :class:`NoiseSource` gives
its copies fresh OS entropy
(``docs/design.rst``, "Neighbouring datasets and what epsilon covers" and
"Serving state, copies and the ledger").
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral

import numpy as np

from .._warn import warn_user
from ..exceptions import PrivacyLeakWarning

__all__ = ["NoiseSource", "make_noise_generators"]


def make_noise_generators(
    noise_random_state: int | None = None, n_streams: int = 1
) -> tuple[list[np.random.Generator], bool]:
    """Independent noise generators for one fit.

    With ``noise_random_state=None`` the generators are seeded from OS
    entropy, so every fit draws fresh noise. An integer seed makes the noise
    replayable, which is for tests and experiments only and warns with
    :class:`~dpsklearn.exceptions.PrivacyLeakWarning`.

    Returns
    -------
    generators : list of numpy.random.Generator
    reseed_on_copy : bool
        ``True`` when copies of the serving state must draw fresh entropy.

    Examples
    --------
    >>> from dpsklearn.noise import make_noise_generators
    >>> gens, reseed = make_noise_generators(None, 2)
    >>> len(gens), reseed
    (2, True)
    """
    if noise_random_state is None:
        seq = np.random.SeedSequence()
        reseed_on_copy = True
    elif isinstance(noise_random_state, Integral) and not isinstance(
        noise_random_state, bool
    ):
        warn_user(
            "noise_random_state is set: the mechanism noise is replayable by "
            "anyone who knows the seed, and refits reuse the same noise. Use "
            "it for tests and experiments only.",
            PrivacyLeakWarning,
        )
        seq = np.random.SeedSequence(int(noise_random_state))
        reseed_on_copy = False
    else:
        raise TypeError(
            "noise_random_state must be None or an int, got "
            f"{type(noise_random_state).__name__}."
        )
    generators = [np.random.Generator(np.random.PCG64(s)) for s in seq.spawn(n_streams)]
    return generators, reseed_on_copy


class NoiseSource:
    """The noise generators of one fitted model; copies draw fresh OS entropy.

    ``source[i]`` is the ``i``-th generator. When ``reseed_on_copy`` is true
    (``noise_random_state=None``), a pickled or deep-copied source carries no
    generator state and the copy seeds new generators from OS entropy, so a
    copy never replays the original's noise. With ``noise_random_state`` set,
    copies replay the same noise, which is what tests ask for.

    Parameters
    ----------
    generators : list of numpy.random.Generator
    reseed_on_copy : bool

    Examples
    --------
    >>> import copy
    >>> from dpsklearn.noise import NoiseSource, make_noise_generators
    >>> source = NoiseSource(*make_noise_generators(None, 2))
    >>> twin = copy.deepcopy(source)
    >>> bool(twin[0].random() != source[0].random())
    True
    """

    def __init__(
        self, generators: Iterable[np.random.Generator], reseed_on_copy: bool = True
    ) -> None:
        self.generators = list(generators)
        self.reseed_on_copy = bool(reseed_on_copy)

    def __getitem__(self, index: int) -> np.random.Generator:
        return self.generators[index]

    def __len__(self) -> int:
        return len(self.generators)

    def __getstate__(self):
        state = self.__dict__.copy()
        if self.reseed_on_copy:
            state["generators"] = len(self.generators)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if isinstance(self.generators, int):
            self.generators = [np.random.default_rng() for _ in range(self.generators)]

    def __repr__(self) -> str:
        return f"NoiseSource({len(self.generators)} generators)"
