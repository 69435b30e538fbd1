//! The witness function `μ_P − μ_Q` with BKE posterior bands (seed 000 §2.2, §5, Fig. 2E and 3).
//!
//! For a fixed θ and τ², the BKE posteriors of `μ_P` (from `x`) and `μ_Q` (from `y`) are independent
//! Gaussian processes (seed 000 eq. (7)–(8), [`BkePosterior`]), so on a grid `g`
//! `μ_P(g) − μ_Q(g) ~ N(m_P(g) − m_Q(g), v_P(g) + v_Q(g))` pointwise. The credible band at level `ℓ`
//! is `mean ± z·sd` with `z = Φ⁻¹((1 + ℓ)/2)` (`ℓ = 0.8`: the seed's 80 % intervals). The empirical
//! witness `(1/n) Σ_i k(x_i, g) − (1/m) Σ_j k(y_j, g)` is reported alongside.
//!
//! Extending to integrated hyperparameters (the seed's Fig. 3, NUTS over θ and τ²) means averaging
//! posterior draws over hyperparameter draws ([`crate::bayes`]); [`FittedWitness::draws`] returns
//! joint draws for one `(θ, τ²)`.
//!
//! ```
//! use bke_core::hypothesis::{LengthscaleSelection, WitnessParams};
//! use bke_core::{Params, Points, TwoSamples};
//! use bke_linalg::DefaultBackend;
//! let x = Points::from_1d("x", &[-1.0, -0.5, 0.0, 0.3, 0.8])?;
//! let y = Points::from_1d("y", &[0.5, 1.0, 1.4, 2.0, 2.2])?;
//! let params = WitnessParams { selection: LengthscaleSelection::fixed(0.7), ..WitnessParams::default() };
//! let w = params.check()?.fit::<DefaultBackend>(&TwoSamples { x, y })?.witness::<DefaultBackend>(&Points::from_1d("g", &[-1.0, 2.0])?)?;
//! assert!(w.mean[0] > 0.0 && w.mean[1] < 0.0);
//! # Ok::<(), bke_core::CoreError>(())
//! ```

use super::kernels::WeightedKernel;
use super::resampling::choice;
use super::select::{LengthscaleSelection, SelectRule, SelectedKernels, TestKind, select_kernels};
use crate::embedding::{BkeParams, BkePosterior, EmbeddingPrior};
use crate::estimator::{Estimator, Params, Predict, Prediction, Progress, TwoSamples, Valid};
use crate::special::normal_quantile;
use crate::{CoreError, Points, check_positive};
use bke_linalg::{Backend, Mat};

/// Parameters of the witness: `WitnessParams { .. }.check()?.fit::<B>(&TwoSamples { x, y })?`
/// chooses θ on the pooled sample and conditions both BKE posteriors; [`FittedWitness::witness`]
/// evaluates it on a grid. Defaults: BKL-Bayes' lengthscale, τ² = 1, Lebesgue prior measure, level 0.8.
#[derive(Debug, Clone, PartialEq)]
pub struct WitnessParams {
    /// How the lengthscale θ of the squared exponential kernel is chosen: fixed, median, BKL, or
    /// BKL-Bayes (the default: the Gaussian kernel of largest weight in the two-sample test's
    /// BKL-Bayes collection, i.e. the mode of the BKE posterior over θ).
    pub selection: LengthscaleSelection,
    /// BKE noise level τ² (seed 000 eq. (5)); the seed uses 1.
    pub tau2: f64,
    /// BKE prior measure ν.
    pub prior: EmbeddingPrior,
    /// Credible level of the band, in (0, 1).
    pub level: f64,
}

impl Default for WitnessParams {
    fn default() -> Self {
        Self {
            selection: LengthscaleSelection::default(),
            tau2: 1.0,
            prior: EmbeddingPrior::Lebesgue,
            level: 0.8,
        }
    }
}

impl Params for WitnessParams {
    type Error = CoreError;

    /// Errors unless τ² is finite and positive, the prior is valid, `0 < level < 1` and the selection
    /// chooses one kernel.
    fn validate(&self) -> Result<(), CoreError> {
        check_positive("tau2", self.tau2)?;
        self.prior.check()?;
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(CoreError::InvalidParameter {
                name: "credible level".into(),
                value: self.level,
                reason: "must lie strictly between 0 and 1, e.g. 0.8".into(),
            });
        }
        if self.selection.is_aggregated() && self.selection.rule() != Some(SelectRule::BklBayes) {
            return Err(choice(
                &format!("selection '{}' for the witness", self.selection.name()),
                "the witness uses one kernel: use a fixed lengthscale, median, bkl or bkl-bayes",
            ));
        }
        self.selection.validate(TestKind::TwoSample)
    }
}

impl Estimator for WitnessParams {
    type Data = TwoSamples;
    type Fitted = FittedWitness;

    /// Chooses θ on the pooled sample and conditions the BKE posteriors of `μ_P` and `μ_Q`.
    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &TwoSamples,
        progress: &dyn Progress,
    ) -> Result<FittedWitness, CoreError> {
        let (x, y) = (&data.x, &data.y);
        x.check_len("sample x", 2)?;
        y.check_len("sample y", 2)?;
        x.check_dim("sample y", y.dim())?;
        let selected = select_kernels::<B>(&x.concat(y)?, &params.selection, TestKind::TwoSample, progress)?;
        let lengthscale = witness_lengthscale(&selected)?;
        let bke = BkeParams::new(vec![lengthscale], params.tau2).with_prior(params.prior);
        Ok(FittedWitness {
            p: bke.clone().check()?.fit::<B>(x)?,
            q: bke.check()?.fit::<B>(y)?,
            x: x.clone(),
            y: y.clone(),
            kernel: WeightedKernel::gaussian(lengthscale),
            level: params.level,
            selected,
        })
    }
}

/// The witness's lengthscale: the one kernel of a single-kernel selection, or the Gaussian kernel of
/// largest weight in a collection (BKL-Bayes: the posterior mode over θ).
fn witness_lengthscale(selected: &SelectedKernels) -> Result<f64, CoreError> {
    selected
        .kernels
        .iter()
        .filter(|k| k.family == super::kernels::TestFamily::Gaussian)
        .max_by(|a, b| a.weight.total_cmp(&b.weight))
        .map(|k| k.lengthscale)
        .ok_or_else(|| {
            choice("a kernel collection without a Gaussian kernel for the witness", "use median or bkl")
        })
}

/// The witness with θ chosen and both BKE posteriors conditioned.
#[derive(Debug, Clone)]
pub struct FittedWitness {
    p: BkePosterior,
    q: BkePosterior,
    x: Points,
    y: Points,
    kernel: WeightedKernel,
    level: f64,
    selected: SelectedKernels,
}

/// The witness on a grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Witness {
    /// BKE posterior mean of `μ_P − μ_Q` at each grid point.
    pub mean: Vec<f64>,
    /// Posterior standard deviation.
    pub sd: Vec<f64>,
    /// Lower end of the credible band.
    pub lower: Vec<f64>,
    /// Upper end of the credible band.
    pub upper: Vec<f64>,
    /// The empirical witness `μ̂_P − μ̂_Q` (seed 000 eq. (2)).
    pub empirical: Vec<f64>,
}

impl FittedWitness {
    /// The lengthscale θ.
    pub fn lengthscale(&self) -> f64 {
        self.kernel.lengthscale
    }

    /// How θ was chosen.
    pub fn selected(&self) -> &SelectedKernels {
        &self.selected
    }

    fn check_grid(&self, grid: &Points) -> Result<(), CoreError> {
        self.x.check_dim("grid", grid.dim())?;
        grid.check_len("grid", 1)
    }

    /// The witness `μ_P − μ_Q` on `grid` with BKE posterior mean and credible band (module docs).
    pub fn witness<B: Backend>(&self, grid: &Points) -> Result<Witness, CoreError> {
        self.check_grid(grid)?;
        let Prediction { mean: mp, variance: vp } = self.p.predict::<B>(grid)?;
        let Prediction { mean: mq, variance: vq } = self.q.predict::<B>(grid)?;
        let z = normal_quantile(0.5 * (1.0 + self.level));
        let mean: Vec<f64> = mp.iter().zip(&mq).map(|(a, b)| a - b).collect();
        let sd: Vec<f64> = vp.iter().zip(&vq).map(|(a, b)| (a + b).sqrt()).collect();
        let lower = mean.iter().zip(&sd).map(|(m, s)| m - z * s).collect();
        let upper = mean.iter().zip(&sd).map(|(m, s)| m + z * s).collect();
        let emp =
            |s: &Points, g: &[f64]| s.iter().map(|p| self.kernel.eval(p, g)).sum::<f64>() / s.len() as f64;
        let empirical = grid.iter().map(|g| emp(&self.x, g) - emp(&self.y, g)).collect();
        Ok(Witness { mean, sd, lower, upper, empirical })
    }

    /// `draws` joint posterior draws of `μ_P − μ_Q` on `grid` (`|grid| × draws`), from independent
    /// draws of the two BKE posteriors (seeds `seed` and `seed + 1`).
    pub fn draws<B: Backend>(&self, grid: &Points, draws: usize, seed: u64) -> Result<Mat, CoreError> {
        self.check_grid(grid)?;
        let mut p = self.p.sample::<B>(grid, draws, seed)?;
        let q = self.q.sample::<B>(grid, draws, seed.wrapping_add(1))?;
        for (a, b) in p.as_mut_slice().iter_mut().zip(q.as_slice()) {
            *a -= b;
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kernel;
    use bke_linalg::DefaultBackend;

    fn fitted(x: &Points, y: &Points, p: &WitnessParams) -> Result<FittedWitness, CoreError> {
        p.check()?.fit::<DefaultBackend>(&TwoSamples { x: x.clone(), y: y.clone() })
    }

    fn fixed(p: &WitnessParams) -> f64 {
        p.selection.fixed.expect("a fixed lengthscale")
    }

    fn sample(shift: f64, n: usize) -> Points {
        Points::from_1d(
            "s",
            &(0..n).map(|i| shift + ((i * 37 % n) as f64 / n as f64 - 0.5) * 3.0).collect::<Vec<_>>(),
        )
        .unwrap()
    }

    /// Dense oracle: seed 000 eq. (8) with explicit matrices and a Gaussian-elimination solve.
    fn dense_posterior(s: &Points, g: &Points, p: &WitnessParams) -> (Vec<f64>, Vec<f64>) {
        let ls = [fixed(p)];
        let n = s.len();
        let k = Kernel::se(ls[0]).unwrap();
        let r = |a: &[f64], b: &[f64]| p.prior.r(&ls, a, b);
        let mu_hat: Vec<f64> =
            s.iter().map(|w| s.iter().map(|xi| k.eval(xi, w)).sum::<f64>() / n as f64).collect();
        let a: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| r(s.point(i), s.point(j)) + if i == j { p.tau2 / n as f64 } else { 0.0 })
                    .collect()
            })
            .collect();
        let solve = |b: Vec<f64>| {
            let mut m = a.clone();
            let mut b = b;
            for c in 0..n {
                let piv = (c..n).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs())).unwrap();
                m.swap(c, piv);
                b.swap(c, piv);
                for i in c + 1..n {
                    let f = m[i][c] / m[c][c];
                    for j in c..n {
                        m[i][j] -= f * m[c][j];
                    }
                    b[i] -= f * b[c];
                }
            }
            let mut x = vec![0.0; n];
            for i in (0..n).rev() {
                x[i] = (b[i] - (i + 1..n).map(|j| m[i][j] * x[j]).sum::<f64>()) / m[i][i];
            }
            x
        };
        let beta = solve(mu_hat);
        let mut mean = Vec::new();
        let mut var = Vec::new();
        for q in g.iter() {
            let rq: Vec<f64> = s.iter().map(|w| r(q, w)).collect();
            mean.push(rq.iter().zip(&beta).map(|(a, b)| a * b).sum());
            let sol = solve(rq.clone());
            var.push(r(q, q) - rq.iter().zip(&sol).map(|(a, b)| a * b).sum::<f64>());
        }
        (mean, var)
    }

    #[test]
    fn witness_matches_dense_posterior() {
        let x = sample(0.0, 23);
        let y = sample(0.7, 17);
        let g = Points::from_1d("g", &[-2.0, -0.5, 0.0, 0.4, 1.1, 2.5]).unwrap();
        let p = WitnessParams {
            selection: LengthscaleSelection::fixed(0.6),
            tau2: 0.5,
            level: 0.8,
            ..Default::default()
        };
        let fit = fitted(&x, &y, &p).unwrap();
        assert_eq!(fit.lengthscale(), 0.6);
        let w = fit.witness::<DefaultBackend>(&g).unwrap();
        let (mp, vp) = dense_posterior(&x, &g, &p);
        let (mq, vq) = dense_posterior(&y, &g, &p);
        let z = 1.281_551_565_544_600_5;
        for i in 0..g.len() {
            let sd = (vp[i] + vq[i]).sqrt();
            assert!((w.mean[i] - (mp[i] - mq[i])).abs() < 1e-10, "{i}");
            assert!((w.sd[i] - sd).abs() < 1e-8, "{i}: {} vs {sd}", w.sd[i]);
            assert!((w.lower[i] - (w.mean[i] - z * w.sd[i])).abs() < 1e-12);
            assert!((w.upper[i] - (w.mean[i] + z * w.sd[i])).abs() < 1e-12);
            let k = Kernel::se(0.6).unwrap();
            let e = x.iter().map(|a| k.eval(a, g.point(i))).sum::<f64>() / 23.0
                - y.iter().map(|a| k.eval(a, g.point(i))).sum::<f64>() / 17.0;
            assert!((w.empirical[i] - e).abs() < 1e-14);
        }
        // a wider level gives a wider band
        let w95 = fitted(&x, &y, &WitnessParams { level: 0.95, ..p.clone() })
            .unwrap()
            .witness::<DefaultBackend>(&g)
            .unwrap();
        assert!(w95.upper.iter().zip(&w.upper).all(|(a, b)| a > b));
        // draws: their spread matches the posterior sd (400 draws: relative sd error ≈ 3.5 %)
        let d = fit.draws::<DefaultBackend>(&g, 400, 3).unwrap();
        for i in 0..g.len() {
            let row: Vec<f64> = (0..400).map(|j| d[(i, j)]).collect();
            let m = row.iter().sum::<f64>() / 400.0;
            let s = (row.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 399.0).sqrt();
            assert!((s / w.sd[i] - 1.0).abs() < 0.2, "{i}: {s} vs {}", w.sd[i]);
            assert!((m - w.mean[i]).abs() < 4.0 * w.sd[i] / 20.0, "{i}");
        }
    }

    #[test]
    fn bad_input() {
        let x = sample(0.0, 10);
        let g2 = Points::from_rows("g", &[vec![0.0, 0.0]]).unwrap();
        let p = WitnessParams::default();
        assert!(fitted(&x, &x, &p).unwrap().witness::<DefaultBackend>(&g2).is_err());
        assert!(fitted(&x, &x.select(&[0]), &p).is_err());
        assert!(fitted(&x, &x, &WitnessParams { level: 1.0, ..p.clone() }).is_err());
        assert!(
            fitted(&x, &x, &WitnessParams { selection: LengthscaleSelection::fixed(0.0), ..p.clone() })
                .is_err()
        );
        let agg = WitnessParams { selection: LengthscaleSelection::new(SelectRule::Fuse), ..p };
        assert!(agg.check().unwrap_err().to_string().contains("one kernel"));
    }
}
