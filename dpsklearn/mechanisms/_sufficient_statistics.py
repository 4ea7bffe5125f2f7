"""Ridge regression released by sufficient-statistics perturbation (AdaSSP).

Wang (2018), "Revisiting differentially private linear regression: optimal
and adaptive prediction & estimation in unbounded domain" (UAI 2018),
Algorithm 2 (AdaSSP): for rows ``phi_i`` with ``||phi_i||_2 <= B_x`` and
labels ``|y_i| <= B_y``, release

* ``G~ = Phi^T Phi + E``, ``E`` symmetric with i.i.d. Gaussian entries on and
  above the diagonal;
* ``b~ = Phi^T y + e``, ``e`` Gaussian;
* ``lam~``, a noisy lower estimate of ``lambda_min(Phi^T Phi)``;

and solve ``theta = (G~ + lam I)^-1 b~`` with the regulariser ``lam`` set
from ``lam~`` and the noise level (more regularisation where the data's own
curvature is too small to drown the noise). Everything after the three
releases is post-processing.

**Replace-one sensitivities** (the paper states add/remove ones,
``docs/regression.rst``, "Sufficient-statistics perturbation"): replacing
``(phi, y)`` by ``(phi', y')`` moves

* ``Phi^T Phi`` by ``D = phi' phi'^T - phi phi^T`` with ``||D||_F^2 =
  ||phi||^4 + ||phi'||^4 - 2 (phi.phi')^2 <= 2 B_x^4``; the released upper
  triangle (diagonal once, each off-diagonal entry once) has L2 norm at most
  ``||D||_F``, so its sensitivity is ``sqrt(2) B_x^2`` (the triangle
  inequality gives ``2 B_x^2``; add/remove gives ``B_x^2``);
* ``Phi^T y`` by ``phi' y' - phi y``: ``2 B_x B_y`` (add/remove ``B_x B_y``);
  with ``k`` label columns (``Phi^T Y``, one row ``y_i`` of ``Y`` per record,
  ``||y_i||_2 <= B_y``: one-vs-rest classes, several targets), by ``phi'
  y'^T - phi y^T``, whose Frobenius norm is at most ``||phi'|| ||y'|| +
  ||phi|| ||y|| <= 2 B_x B_y`` (each rank-one term has Frobenius norm the
  product of its factors' norms): the same bound on ``p k`` coordinates;
* ``lambda_min(Phi^T Phi)`` by at most ``B_x^2`` (Weyl's inequalities:
  ``B = A - phi phi^T`` has ``lambda_min(A) - B_x^2 <= lambda_min(B) <=
  lambda_min(A)``, and ``B + phi' phi'^T`` has ``lambda_min(B) <= . <=
  lambda_min(B) + B_x^2``; together within ``B_x^2`` of ``lambda_min(A)``).

Each is released on a grid of step ``g`` (a power of two) with rounded
Gaussian noise, at the grid's L2 sensitivity ``Delta/g + sqrt(d)`` for ``d``
coordinates (``docs/design.rst``, "Noise primitives"); ``g`` is chosen near
``Delta / (1024 sqrt(d))`` so the rounding adds about 0.1 % to the noise.
The three Gaussian releases compose in zCDP: a share of the largest ``rho``
that the conversion certifies within ``(epsilon, delta)`` goes to each.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from scipy import linalg

from .._monotone import smallest_within
from .._param_validation import StrOptions
from .._validation import DELTA_POSITIVE, FINITE_POSITIVE, OPEN_UNIT, validate_params
from ..accounting import (
    ApproximateEvent,
    GaussianEvent,
    PrivacyEvent,
    gdp_delta,
    largest_certified,
    rdp_epsilon_of_rho,
    zcdp_epsilon,
)
from ..noise import NoiseSource, l2_grid_units, rounded_gaussian
from ._base import Engine, Mechanism
from ._gaussian_calibration import largest_gaussian_rho

__all__ = [
    "NoisyStatistics",
    "accumulate_statistics",
    "SufficientStatisticsRelease",
    "gram_sensitivity",
    "moment_sensitivity",
]

#: The three releases, in order.
PARTS = ("gram", "moment", "eigenvalue")
#: Shares of ``rho`` for the three releases by default: the Gram matrix and
#: the moment vector carry the signal; the smallest eigenvalue of a
#: random-feature Gram matrix is near 0 and needs only a rough release.
DEFAULT_SHARES = (0.5, 0.48, 0.02)
#: The fraction of the Gram noise's spectral edge used as the regulariser.
REGULARISER_EDGE_FRACTION = 0.25


def gram_sensitivity(feature_bound: float) -> float:
    """Replace-one L2 sensitivity of the upper triangle of ``Phi^T Phi``.

    ``sqrt(2) B_x^2``: ``||phi' phi'^T - phi phi^T||_F^2 = ||phi||^4 +
    ||phi'||^4 - 2 (phi . phi')^2 <= 2 B_x^4``, attained by orthogonal rows
    of norm ``B_x``; the upper triangle's norm is at most the Frobenius norm.

    Examples
    --------
    >>> from dpsklearn.mechanisms import gram_sensitivity
    >>> round(gram_sensitivity(1.0), 6)
    1.414214
    """
    return math.sqrt(2.0) * float(feature_bound) ** 2


def moment_sensitivity(feature_bound: float, label_bound: float) -> float:
    """Replace-one L2 sensitivity of ``Phi^T y``: ``2 B_x B_y``.

    Examples
    --------
    >>> from dpsklearn.mechanisms import moment_sensitivity
    >>> moment_sensitivity(1.0, 3.0)
    6.0
    """
    return 2.0 * float(feature_bound) * float(label_bound)


def accumulate_statistics(
    X: np.ndarray,
    targets: np.ndarray,
    feature_map: Callable[[np.ndarray], np.ndarray],
    n_features: int,
    *,
    working_memory: float = 64.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """The exact ``(Phi^T Phi, Phi^T Y, lambda_min(Phi^T Phi))`` (non-private).

    ``Phi = feature_map(X)`` is built in chunks of rows of at most
    ``working_memory`` MiB (one matrix product per chunk), so memory does
    not grow with ``n``; ``feature_map`` may return a sparse matrix. What
    :meth:`SufficientStatisticsRelease.release` takes; nothing here may
    leave a fit unreleased.

    Examples
    --------
    >>> import numpy as np
    >>> from dpsklearn.mechanisms import accumulate_statistics
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> gram, moment, lam = accumulate_statistics(X, np.array([1.0, -1.0]),
    ...                                           lambda rows: rows, 2)
    >>> gram.tolist(), moment.tolist(), lam
    ([[1.0, 0.0], [0.0, 1.0]], [1.0, -1.0], 1.0)
    """
    targets = np.asarray(targets, dtype=np.float64)
    p = int(n_features)
    gram = np.zeros((p, p))
    moment = np.zeros((p,) + targets.shape[1:])
    chunk = max(1, int(working_memory * 2**20 // (8 * max(1, p))))
    for start in range(0, X.shape[0], chunk):
        features = feature_map(X[start : start + chunk])
        if sp.issparse(features):  # a few non-zeros per row: sparse products
            gram += (features.T @ features).toarray()
        else:
            gram += features.T @ features
        moment += features.T @ targets[start : start + chunk]
    lambda_min = float(linalg.eigvalsh(gram, subset_by_index=(0, 0))[0])
    return gram, moment, lambda_min


def _fine_grid_step(sensitivity, n_coordinates):
    """A power of two near ``sensitivity / (1024 sqrt(d))``: rounding adds ~0.1 %."""
    target = sensitivity / (1024.0 * math.sqrt(n_coordinates))
    return float(2.0 ** round(math.log2(target)))


def _upper(matrix):
    rows, cols = np.triu_indices(matrix.shape[0])
    return matrix[rows, cols], (rows, cols)


@dataclass(frozen=True)
class NoisyStatistics:
    """The three released statistics (all that leaves the private data).

    ``gram`` is None, and ``lambda_min`` NaN, when not released (share 0).
    """

    gram: np.ndarray | None
    moment: np.ndarray
    lambda_min: float


class SufficientStatisticsRelease(Mechanism):
    """AdaSSP's three Gaussian releases, calibrated to one ``(epsilon, delta)``.

    Released once, at ``fit`` (no engine): :meth:`release` takes the exact
    ``Phi^T Phi``, ``Phi^T y`` and ``lambda_min(Phi^T Phi)`` and returns
    their noisy versions; :meth:`regulariser` and :meth:`solve` are
    post-processing. Module notes: the replace-one sensitivities and the
    grid.

    Parameters
    ----------
    epsilon, delta : float
        The total budget (``delta > 0``).
    n_features : int
        ``p``, the width of ``Phi``.
    feature_bound, label_bound : float
        ``B_x`` and ``B_y`` (public).
    shares : (float, float, float)
        Shares of ``rho`` for the Gram matrix, the moment vector and the
        smallest eigenvalue.
    rho, conversion : float, str
        The certified total and what certified it.
    failure_probability : float
        The regulariser's confidence parameter (accuracy only; it enters no
        privacy figure).
    n_targets : int, default=1
        ``k``, the columns of the moment ``Phi^T Y`` (one per class of a
        one-vs-rest classifier); ``label_bound`` then bounds the L2 norm of
        one record's row of ``Y`` (module notes).

    Examples
    --------
    >>> from dpsklearn.mechanisms import SufficientStatisticsRelease
    >>> mech = SufficientStatisticsRelease.calibrate(
    ...     1.0, 1e-5, n_features=201, feature_bound=1.0, label_bound=20.0)
    >>> mech.conversion, [round(s, 1) for s in mech.noise_std]
    ('gdp', [7.5, 215.5, 26.4])
    """

    n_streams = 1

    def __init__(
        self,
        epsilon: float,
        delta: float,
        n_features: int,
        feature_bound: float,
        label_bound: float,
        shares: Sequence[float],
        rho: float,
        conversion: str,
        failure_probability: float = 0.05,
        n_targets: int = 1,
    ) -> None:
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.n_features = int(n_features)
        self.feature_bound = float(feature_bound)
        self.label_bound = float(label_bound)
        self.shares = tuple(float(s) for s in shares)
        self.rho = float(rho)
        self.conversion = str(conversion)
        self.failure_probability = float(failure_probability)
        self.n_targets = int(n_targets)
        p = self.n_features
        self.sensitivities = (
            gram_sensitivity(self.feature_bound),
            moment_sensitivity(self.feature_bound, self.label_bound),
            self.feature_bound**2,
        )
        self.dimensions = (p * (p + 1) // 2, p * self.n_targets, 1)
        self.grid_steps = tuple(
            _fine_grid_step(s, d)
            for s, d in zip(self.sensitivities, self.dimensions, strict=True)
        )
        self.units = tuple(
            l2_grid_units(s, g, d)
            for s, g, d in zip(
                self.sensitivities, self.grid_steps, self.dimensions, strict=True
            )
        )
        # A Gaussian of L2 sensitivity u (grid units) and noise sigma_u is
        # u^2 / (2 sigma_u^2)-zCDP; each part gets its share of rho.
        # A part with share 0 is not released (infinite noise, no event).
        self.sigma_units = tuple(
            u / math.sqrt(2.0 * share * self.rho) if share > 0 else math.inf
            for u, share in zip(self.units, self.shares, strict=True)
        )

    @classmethod
    @validate_params(
        {
            "epsilon": [FINITE_POSITIVE],
            "delta": [DELTA_POSITIVE],
            "n_features": [FINITE_POSITIVE],
            "feature_bound": [FINITE_POSITIVE],
            "label_bound": [FINITE_POSITIVE],
            "shares": ["array-like"],
            "calibration": [StrOptions({"auto", "rdp", "zcdp"})],
            "failure_probability": [OPEN_UNIT],
            "n_targets": [FINITE_POSITIVE],
        },
        prefer_skip_nested_validation=True,
    )
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        *,
        n_features: int,
        feature_bound: float,
        label_bound: float,
        shares: Sequence[float] = DEFAULT_SHARES,
        calibration: str = "auto",
        failure_probability: float = 0.05,
        n_targets: int = 1,
    ) -> SufficientStatisticsRelease:
        """Noise of the three releases for a total ``(epsilon, delta)``.

        ``shares`` split the certified ``rho`` (non-negative, not all 0,
        summing to at most 1); a part whose share is 0 is not released (a
        moment alone: per-class counts and sums, as naive Bayes needs; a
        Gram matrix alone: a covariance, as PCA needs).
        """
        shares = tuple(float(s) for s in shares)
        if (
            len(shares) != 3
            or min(shares) < 0
            or max(shares) <= 0
            or sum(shares) > 1.0 + 1e-12
        ):
            raise ValueError(
                "shares must be three non-negative numbers summing to at most 1, "
                "not all 0 (Gram matrix, moment vector, smallest eigenvalue), "
                f"got {shares!r}."
            )
        rho, conversion = largest_gaussian_rho(epsilon, delta, calibration)
        if calibration in ("auto", "gdp"):
            # The three releases are continuous Gaussian mechanisms (rounded
            # after the noise: post-processing), so their composition is
            # exactly mu-GDP with mu^2 = 2 rho (Dong, Roth and Su 2022,
            # Cor. 3.3), converted exactly (Cor. 2.13).
            gdp_rho = _largest_gdp_rho(float(epsilon), float(delta))
            if gdp_rho > rho:
                rho, conversion = gdp_rho, "gdp"
        return cls(
            epsilon,
            delta,
            int(n_features),
            feature_bound,
            label_bound,
            shares,
            rho,
            conversion,
            failure_probability,
            int(n_targets),
        )

    @property
    def noise_std(self) -> tuple[float, ...]:
        """Noise standard deviation of each part in its own units (``g sigma_u``)."""
        return tuple(
            g * s for g, s in zip(self.grid_steps, self.sigma_units, strict=True)
        )

    @property
    def composition(self) -> str:  # type: ignore[override]  # a class attribute
        # Calibrated through Gaussian DP, the release is one certified
        # (epsilon, delta), which a model's own accountant records as such.
        return self.conversion if self.conversion in ("rdp", "zcdp") else "basic"

    def _gaussian_events(self, label):
        return [
            GaussianEvent(sigma, units, label=label)
            for sigma, units in zip(self.sigma_units, self.units, strict=True)
            if math.isfinite(sigma)
        ]

    def privacy_events(self, label: str | None = None) -> list[PrivacyEvent]:
        return [ApproximateEvent(self.epsilon, self.delta, label=label)]

    def event_options(
        self, label: str | None = None, composition: str = "basic"
    ) -> list[list[PrivacyEvent]]:
        """The three Gaussian events where they compose, else the whole."""
        whole = self.privacy_events(label)
        if composition in ("rdp", "zcdp"):
            return [self._gaussian_events(label), whole]
        return [whole]

    def spent(self, units: int, engine: Engine) -> tuple[float, float]:
        total = sum(e.rho for e in self._gaussian_events(None))
        return self.epsilon_of_rho(total), self.delta

    def epsilon_of_rho(self, rho: float) -> float:
        """``epsilon`` at ``delta`` of Gaussian releases totalling ``rho``.

        Under this calibration's conversion (exact Gaussian DP, zCDP, or RDP).
        """
        if self.conversion == "gdp":
            return _gdp_epsilon(math.sqrt(2.0 * rho), self.delta)
        if self.conversion == "zcdp":
            return zcdp_epsilon(rho, self.delta)
        return rdp_epsilon_of_rho(rho, self.delta)

    # -- the release and its post-processing ---------------------------------
    def release(
        self,
        gram: ArrayLike | None,
        moment: ArrayLike | None,
        lambda_min: float | None,
        noise: NoiseSource,
    ) -> NoisyStatistics:
        """The noisy statistics; ``noise`` is the fit's NoiseSource.

        ``moment`` is ``Phi^T y`` of shape ``(p,)`` or, with ``n_targets``
        columns, ``Phi^T Y`` of shape ``(p, k)`` (released flattened, one
        Gaussian vector; the noisy moment keeps the given shape).

        Each part is rounded to its grid and gets rounded Gaussian noise in
        grid units (the Gaussian mechanism on the integer vector, then
        rounding: post-processing). A part whose share is 0 is not released
        (``None`` in, ``None`` or NaN out).
        """
        rng = noise[0]
        if moment is None or not self.shares[1] > 0:
            moment = np.zeros(self.dimensions[1])
        moment = np.asarray(moment, np.float64)
        gram_released = self.shares[0] > 0
        gram = np.asarray(
            gram if gram_released else np.zeros((self.n_features,) * 2),
            dtype=np.float64,
        )
        if lambda_min is None or not self.shares[2] > 0:
            lambda_min = 0.0
        if moment.size != self.dimensions[1] or gram.shape != (self.n_features,) * 2:
            raise ValueError(
                f"the release is calibrated for {self.n_features} features and "
                f"{self.n_targets} label column(s); got a Gram matrix of shape "
                f"{gram.shape} and a moment of shape {moment.shape}."
            )
        upper, (rows, cols) = _upper(gram)
        parts = []
        for value, g, sigma in zip(
            (upper, moment.ravel(), np.atleast_1d(lambda_min)),
            self.grid_steps,
            self.sigma_units,
            strict=True,
        ):
            if not math.isfinite(sigma):  # share 0: not released
                parts.append(np.full(value.shape, np.nan))
                continue
            on_grid = np.rint(value / g)
            noisy = on_grid + rounded_gaussian(sigma, on_grid.shape, rng=rng)
            parts.append(noisy * g)
        noisy_gram = np.empty_like(gram)
        noisy_gram[rows, cols] = parts[0]
        noisy_gram[cols, rows] = parts[0]
        return NoisyStatistics(
            noisy_gram if gram_released else None,
            parts[1].reshape(moment.shape),
            float(parts[2][0]),
        )

    def regulariser(self, noisy_lambda_min: float) -> float:
        """The ridge ``lam`` from the released smallest eigenvalue (post-processing).

        ``lam_min~ = max(lam_min + noise - sigma_3 sqrt(2 ln(1/rho_f)), 0)``
        is below the true smallest eigenvalue with probability ``1 -
        rho_f``, and ``lam = max(0, c 2 sigma_1 sqrt(p) - lam_min~)``:
        AdaSSP's rule (Wang 2018, Algorithm 2) with the Gram noise's
        spectral edge ``2 sigma_1 sqrt(p)`` (the operator norm of a symmetric
        Gaussian matrix of entry deviation ``sigma_1``, Wigner's semicircle)
        in place of the paper's union bound ``sigma_1 sqrt(p ln(2 p^2 /
        rho_f))``, and a fraction ``c = REGULARISER_EDGE_FRACTION`` of it:
        the paper's full bound keeps ``G~ + lam I`` positive definite with
        high probability but over-regularises random-feature models by a
        factor of about eight; with the noisy Gram matrix projected onto the
        positive semi-definite cone first (:meth:`solve`), a quarter of the
        edge scored best on validation rows (``docs/regression.rst``). Any
        ``lam`` is post-processing: it changes accuracy, never privacy.
        """
        sigma_gram, _, sigma_eig = self.noise_std
        rho_f = self.failure_probability
        p = self.n_features
        lower = max(
            noisy_lambda_min - sigma_eig * math.sqrt(2.0 * math.log(1.0 / rho_f)), 0.0
        )
        edge = 2.0 * sigma_gram * math.sqrt(p)
        return max(0.0, REGULARISER_EDGE_FRACTION * edge - lower)

    def solve(self, statistics: NoisyStatistics) -> tuple[NDArray[np.float64], float]:
        """``theta = (G~ + lam I)^-1 b~`` (post-processing).

        The noisy Gram matrix is first projected onto the positive
        semi-definite cone (its negative eigenvalues set to 0), so the system
        is positive definite whenever ``lam > 0``.
        """
        if statistics.gram is None:
            raise ValueError("the Gram matrix was not released (its share is 0).")
        lam = self.regulariser(statistics.lambda_min)
        values, vectors = linalg.eigh(statistics.gram, check_finite=False)
        values = np.maximum(values, 0.0) + max(lam, 1e-12)
        projected = vectors.T @ statistics.moment
        if projected.ndim == 2:  # one column of weights per label column
            values = values[:, None]
        theta = vectors @ (projected / values)
        return theta, lam

    def fitted_attributes(self) -> dict[str, Any]:
        return {
            "calibration_": self.conversion,
            "noise_std_": self.noise_std,
        }


def _largest_gdp_rho(epsilon, delta, rtol=1e-9):
    """The largest ``rho = mu^2 / 2`` whose ``mu``-GDP is ``(epsilon, delta)``-DP.

    ``gdp_delta`` grows with ``mu``; the bisection keeps the safe end, then a
    relative margin of ``rtol`` below it.
    """
    rho = largest_certified(
        lambda r: gdp_delta(epsilon, math.sqrt(2.0 * r)) / delta, 1.0, rtol
    )
    return rho * (1.0 - rtol)


def _gdp_epsilon(mu, delta):
    """The smallest ``epsilon`` at which ``mu``-GDP has ``delta`` (from above)."""
    return smallest_within(
        lambda epsilon: gdp_delta(epsilon, mu) <= delta, 1.0, grow=True, rtol=1e-12
    )
