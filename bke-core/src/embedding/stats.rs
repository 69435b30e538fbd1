//! The sufficient statistics of the marginal pseudolikelihood over a chunk of data points, and
//! their exact merge (module docs of [`super::marginal`]): the count `n`, the mean feature vector
//! `μ̂`, the centred sum of squares `SS = Σ_i ‖φ_i − μ̂‖²`, their derivatives in the log
//! lengthscale(s) and the Jacobian sums. Two chunks merge by the pairwise update of Chan, Golub &
//! LeVeque (1979), so no sum of squares ever cancels. The sweep over the data ([`super::pass`])
//! produces them; the objective ([`super::marginal`]) consumes them.

use crate::CoreError;

/// The sufficient statistics of the marginal pseudolikelihood over a chunk of data points (see the
/// module docs). Built by [`PseudolikelihoodPlan::partial`](super::PseudolikelihoodPlan::partial), combined by [`PartialStats::merge`],
/// turned into the objective by [`PseudolikelihoodPlan::finish`](super::PseudolikelihoodPlan::finish); [`PartialStats::to_vec`] /
/// [`PartialStats::from_slice`] ship them between processes.
#[derive(Debug, Clone, PartialEq)]
pub struct PartialStats {
    /// Number of points.
    pub(super) n: usize,
    /// Number of landmarks `m`.
    pub(super) m: usize,
    /// Gradient coordinates `G`: 1 (one lengthscale) or `D` (ARD).
    pub(super) gd: usize,
    /// `μ̂` (m).
    pub(super) mean: Vec<f64>,
    /// `∂μ̂/∂log θ_g`, coordinate-major (G·m).
    pub(super) dmean: Vec<f64>,
    /// `Σ_i ‖φ_i − μ̂‖²`.
    pub(super) m2: f64,
    /// Its derivatives (G).
    pub(super) dm2: Vec<f64>,
    /// `Σ_i ½ log det G(x_i)`.
    pub(super) log_volume: f64,
    /// `Σ_i Σ_l p_il t_ilg` (G).
    pub(super) dlog_volume: Vec<f64>,
}

impl PartialStats {
    /// The statistics of no points (the identity of [`PartialStats::merge`]).
    pub fn empty(num_landmarks: usize, gradient_coordinates: usize) -> Self {
        let (m, gd) = (num_landmarks, gradient_coordinates);
        Self {
            n: 0,
            m,
            gd,
            mean: vec![0.0; m],
            dmean: vec![0.0; gd * m],
            m2: 0.0,
            dm2: vec![0.0; gd],
            log_volume: 0.0,
            dlog_volume: vec![0.0; gd],
        }
    }

    /// Number of data points summarised.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no point is summarised.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Adds the statistics of another chunk (exact pairwise update; see the module docs). Errors
    /// when the two were computed for different numbers of landmarks or gradient coordinates.
    pub fn merge(&mut self, other: &PartialStats) -> Result<(), CoreError> {
        if (other.m, other.gd) != (self.m, self.gd) {
            return Err(CoreError::DimensionMismatch {
                what: "partial statistics to merge (landmarks × gradient coordinates)".into(),
                expected: self.m * self.gd,
                found: other.m * other.gd,
            });
        }
        if other.n == 0 {
            return Ok(());
        }
        if self.n == 0 {
            *self = other.clone();
            return Ok(());
        }
        let (na, nb) = (self.n as f64, other.n as f64);
        let n = na + nb;
        let (f, h) = (nb / n, na * nb / n);
        let m = self.m;
        let delta: Vec<f64> = other.mean.iter().zip(&self.mean).map(|(b, a)| b - a).collect();
        self.m2 += other.m2 + h * delta.iter().map(|d| d * d).sum::<f64>();
        for g in 0..self.gd {
            let (da, db) = (&mut self.dmean[g * m..(g + 1) * m], &other.dmean[g * m..(g + 1) * m]);
            let mut cross = 0.0;
            for ((a, b), d) in da.iter_mut().zip(db).zip(&delta) {
                let dd = b - *a;
                cross += d * dd;
                *a += f * dd;
            }
            self.dm2[g] += other.dm2[g] + 2.0 * h * cross;
            self.dlog_volume[g] += other.dlog_volume[g];
        }
        for (a, d) in self.mean.iter_mut().zip(&delta) {
            *a += f * d;
        }
        self.log_volume += other.log_volume;
        self.n += other.n;
        Ok(())
    }

    /// A flat encoding `[n, m, G, μ̂, ∂μ̂, SS, ∂SS, Σ log γ, ∂Σ log γ]` (length `3 + m + Gm + 2 + 2G`).
    pub fn to_vec(&self) -> Vec<f64> {
        let mut v = vec![self.n as f64, self.m as f64, self.gd as f64];
        v.extend(&self.mean);
        v.extend(&self.dmean);
        v.push(self.m2);
        v.extend(&self.dm2);
        v.push(self.log_volume);
        v.extend(&self.dlog_volume);
        v
    }

    /// Decodes [`PartialStats::to_vec`]; errors on a malformed slice.
    pub fn from_slice(v: &[f64]) -> Result<Self, CoreError> {
        let bad = |reason: &str| CoreError::InvalidParameter {
            name: "encoded partial statistics".into(),
            value: v.len() as f64,
            reason: reason.into(),
        };
        let count = |x: f64| (x >= 0.0 && x.fract() == 0.0 && x < 1e15).then_some(x as usize);
        let (n, m, gd) = match v {
            [n, m, g, ..] => (count(*n), count(*m), count(*g)),
            _ => (None, None, None),
        };
        let (Some(n), Some(m), Some(gd)) = (n, m, gd) else {
            return Err(bad("the header [n, m, G] must hold three counts"));
        };
        if v.len() != 3 + m + gd * m + 2 + 2 * gd {
            return Err(bad("its length does not match the header [n, m, G]"));
        }
        let mut rest = &v[3..];
        let mut take = |k: usize| {
            let (a, b) = rest.split_at(k);
            rest = b;
            a.to_vec()
        };
        let (mean, dmean) = (take(m), take(gd * m));
        let (m2, dm2) = (take(1)[0], take(gd));
        let (log_volume, dlog_volume) = (take(1)[0], take(gd));
        Ok(Self { n, m, gd, mean, dmean, m2, dm2, log_volume, dlog_volume })
    }
}
