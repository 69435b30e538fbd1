//! Pre-whitening against a time index (seed 000 §5: "we first pre-whiten the data to control for
//! underlying temporal autocorrelation", following Flaxman et al. 2015).
//!
//! Each variable `v` is regressed on the time index `t` and replaced by its residuals:
//! - [`Prewhitening::Gp`] (the default): GP regression `v = m + f(t) + ε` with an SE kernel whose
//!   lengthscale, signal and noise variances are learned by marginal likelihood ([`crate::gp`]);
//!   residual `v_i − E[f(t_i) | v]`. Handles irregular sampling and repeated times.
//! - [`Prewhitening::Ar`] of order `p`: the rows are put in time order and each variable follows
//!   `v_s = c + Σ_{k=1..p} φ_k v_{s−k} + e_s` (least squares); residual `e_s`. The first `p` rows in
//!   time order have no residual and are dropped from every variable, so the rows of the result are
//!   in time order. It treats consecutive rows as equally spaced, whatever the gaps in `t`.
//! - [`Prewhitening::None`]: the data as they are.
//!
//! What was done is recorded in a [`WhiteningRecord`] (the method, and per variable the GP
//! hyperparameters or the AR coefficients and the share of variance removed).

use super::data::CausalData;
use crate::estimator::{Dataset, Params};
use crate::gp::GpParams;
use crate::{CoreError, Points};
use bke_linalg::{Backend, Mat};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// How the variables are pre-whitened against the time index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prewhitening {
    /// No pre-whitening.
    None,
    /// GP regression on the time index; residuals kept. The default.
    #[default]
    Gp,
    /// Autoregression of the given order on the time-ordered rows; residuals kept.
    Ar {
        /// The order `p ≥ 1`.
        order: usize,
    },
}

impl Prewhitening {
    /// "none", "gp" or "ar:P".
    pub fn name(self) -> String {
        match self {
            Prewhitening::None => "none".into(),
            Prewhitening::Gp => "gp".into(),
            Prewhitening::Ar { order } => format!("ar:{order}"),
        }
    }

    /// Parses a name written by [`Prewhitening::name`] ("ar" alone is order 1).
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        let bad = || CoreError::InvalidChoice {
            what: format!("pre-whitening '{s}'"),
            reason: "use none, gp, or ar:P with an order P ≥ 1 (e.g. ar:1)".into(),
        };
        match s {
            "none" => Ok(Self::None),
            "gp" => Ok(Self::Gp),
            "ar" => Ok(Self::Ar { order: 1 }),
            _ => {
                let order = s.strip_prefix("ar:").and_then(|p| p.parse::<usize>().ok()).ok_or_else(bad)?;
                if order == 0 {
                    return Err(bad());
                }
                Ok(Self::Ar { order })
            }
        }
    }
}

/// What pre-whitening did to one variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariableWhitening {
    /// The variable.
    pub name: String,
    /// Fraction of the variable's variance removed, `1 − var(residual)/var(v)`.
    pub variance_removed: f64,
    /// GP: the lengthscale in time units.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub lengthscale: Option<f64>,
    /// GP: the signal variance.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub signal_variance: Option<f64>,
    /// GP: the noise variance.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub noise_variance: Option<f64>,
    /// AR: intercept then `φ_1..φ_p`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ar_coefficients: Option<Vec<f64>>,
}

/// The pre-whitening that was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhiteningRecord {
    /// "none", "gp" or "ar:P".
    pub method: String,
    /// Rows kept (all of them, except the first `p` for AR).
    pub rows: usize,
    /// Why nothing was done, when nothing was done.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
    /// Per variable, in column order (empty when nothing was done).
    pub variables: Vec<VariableWhitening>,
}

/// The pre-whitened observations (one column per variable) and the record of what was done.
/// Without a time index nothing is done (and the record says so).
pub fn prewhiten<B: Backend>(
    data: &CausalData,
    method: Prewhitening,
    gp: &GpParams,
) -> Result<(Points, WhiteningRecord), CoreError> {
    let unchanged = |note: &str| {
        let rec = WhiteningRecord {
            method: "none".into(),
            rows: data.values().len(),
            note: Some(note.into()),
            variables: Vec::new(),
        };
        Ok((data.values().clone(), rec))
    };
    let Some(time) = data.time() else { return unchanged("no time index was given") };
    match method {
        Prewhitening::None => unchanged("pre-whitening was switched off"),
        Prewhitening::Gp => gp_whiten::<B>(data, time, gp),
        Prewhitening::Ar { order } => ar_whiten::<B>(data, time, order),
    }
}

fn variance(v: &[f64]) -> f64 {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    v.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / v.len() as f64
}

fn removed(before: &[f64], after: &[f64]) -> f64 {
    let v = variance(before);
    if v > 0.0 { 1.0 - variance(after) / v } else { 0.0 }
}

/// Rebuilds row-major points from columns.
fn from_columns(cols: &[Vec<f64>]) -> Result<Points, CoreError> {
    let n = cols.first().map_or(0, Vec::len);
    let data = (0..n).flat_map(|i| cols.iter().map(move |c| c[i])).collect();
    Points::new("pre-whitened data", data, cols.len())
}

fn gp_whiten<B: Backend>(
    data: &CausalData,
    time: &[f64],
    gp: &GpParams,
) -> Result<(Points, WhiteningRecord), CoreError> {
    let t = Points::from_1d("time index", time)?;
    let params = GpParams { ard: false, ..gp.clone() }.check()?;
    let fits: Vec<(Vec<f64>, VariableWhitening)> = (0..data.names().len())
        .into_par_iter()
        .map(|j| {
            let v = data.column(j);
            let fit = params.fit::<B>(&Dataset::new(t.clone(), v.clone())?)?;
            let r = fit.residuals();
            let k = fit.kernel();
            let rec = VariableWhitening {
                name: data.names()[j].clone(),
                variance_removed: removed(&v, &r),
                lengthscale: Some(k.lengthscales[0]),
                signal_variance: Some(k.signal_variance),
                noise_variance: Some(k.noise_variance),
                ar_coefficients: None,
            };
            Ok((r, rec))
        })
        .collect::<Result<_, CoreError>>()?;
    let (cols, variables): (Vec<_>, Vec<_>) = fits.into_iter().unzip();
    let rec = WhiteningRecord { method: "gp".into(), rows: time.len(), note: None, variables };
    Ok((from_columns(&cols)?, rec))
}

fn ar_whiten<B: Backend>(
    data: &CausalData,
    time: &[f64],
    order: usize,
) -> Result<(Points, WhiteningRecord), CoreError> {
    let n = time.len();
    if n < 3 * (order + 1) {
        return Err(CoreError::InvalidParameter {
            name: "AR pre-whitening order".into(),
            value: order as f64,
            reason: format!(
                "{n} rows are too few for order {order}: use at least 3(p + 1) rows or a lower order"
            ),
        });
    }
    let mut by_time: Vec<usize> = (0..n).collect();
    by_time.sort_by(|&a, &b| time[a].total_cmp(&time[b]));
    let mut cols = Vec::new();
    let mut variables = Vec::new();
    for j in 0..data.names().len() {
        let v: Vec<f64> = by_time.iter().map(|&i| data.values().point(i)[j]).collect();
        let (coef, resid) = ar_fit::<B>(&v, order)?;
        variables.push(VariableWhitening {
            name: data.names()[j].clone(),
            variance_removed: removed(&v[order..], &resid),
            lengthscale: None,
            signal_variance: None,
            noise_variance: None,
            ar_coefficients: Some(coef),
        });
        cols.push(resid);
    }
    let rec = WhiteningRecord { method: format!("ar:{order}"), rows: n - order, note: None, variables };
    Ok((from_columns(&cols)?, rec))
}

/// Least-squares AR(p) with intercept: coefficients `(c, φ_1..φ_p)` and the residuals of rows
/// `p..n`, by the normal equations `(XᵀX) b = Xᵀv` (a tiny system, Cholesky with jitter).
pub(crate) fn ar_fit<B: Backend>(v: &[f64], p: usize) -> Result<(Vec<f64>, Vec<f64>), CoreError> {
    let rows = v.len() - p;
    let x = Mat::from_fn(rows, p + 1, |s, k| if k == 0 { 1.0 } else { v[p + s - k] });
    let y = &v[p..];
    let xtx = B::gram(x.as_ref());
    let mut xty = vec![0.0; p + 1];
    B::gemv(1.0, x.as_ref(), bke_linalg::Trans::Yes, y, 0.0, &mut xty)?;
    let (l, _) = B::cholesky_jittered(xtx.as_ref(), Default::default())?;
    B::cholesky_solve_vec_in_place(l.as_ref(), &mut xty)?;
    let resid = (0..rows).map(|s| y[s] - (0..=p).map(|k| x[(s, k)] * xty[k]).sum::<f64>()).collect();
    Ok((xty, resid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, StandardNormal};

    #[test]
    fn names_parse() {
        for m in [Prewhitening::None, Prewhitening::Gp, Prewhitening::Ar { order: 2 }] {
            assert_eq!(Prewhitening::parse(&m.name()).unwrap(), m);
        }
        assert_eq!(Prewhitening::parse("ar").unwrap(), Prewhitening::Ar { order: 1 });
        for bad in ["ar:0", "ar:x", "arima"] {
            assert!(Prewhitening::parse(bad).is_err(), "{bad}");
        }
    }

    /// AR(2) coefficients recovered from a simulated series, and residuals equal to the innovations
    /// up to the estimation error; rows come back in time order with the first p dropped.
    #[test]
    fn ar_recovers_coefficients() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let n = 3000;
        let mut v = vec![0.0, 0.0];
        let mut e = vec![0.0, 0.0];
        for s in 2..n {
            let z: f64 = StandardNormal.sample(&mut rng);
            e.push(z);
            v.push(1.0 + 0.6 * v[s - 1] - 0.3 * v[s - 2] + z);
        }
        let (coef, resid) = ar_fit::<DefaultBackend>(&v, 2).unwrap();
        assert!((coef[1] - 0.6).abs() < 0.05 && (coef[2] + 0.3).abs() < 0.05, "{coef:?}");
        let rms: f64 =
            (resid.iter().zip(&e[2..]).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!(rms < 0.1, "{rms}");
        // through CausalData with shuffled rows
        let order: Vec<usize> = (0..n).rev().collect();
        let vals: Vec<f64> = order.iter().flat_map(|&s| [v[s], v[s] * 2.0]).collect();
        let time: Vec<f64> = order.iter().map(|&s| s as f64).collect();
        let d = CausalData::new(vec!["a".into(), "b".into()], Points::new("v", vals, 2).unwrap(), Some(time))
            .unwrap();
        let (w, rec) =
            prewhiten::<DefaultBackend>(&d, Prewhitening::Ar { order: 2 }, &GpParams::default()).unwrap();
        assert_eq!((w.len(), rec.rows, rec.method.as_str()), (n - 2, n - 2, "ar:2"));
        assert!((w.point(0)[0] - resid[0]).abs() < 1e-9 && (w.point(0)[1] - 2.0 * resid[0]).abs() < 1e-9);
    }

    /// GP pre-whitening removes a smooth seasonal trend and keeps the noise.
    #[test]
    fn gp_removes_a_smooth_trend() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let n = 150;
        let mut vals = Vec::new();
        let mut noise = Vec::new();
        for i in 0..n {
            let t = i as f64;
            let z: f64 = StandardNormal.sample(&mut rng);
            noise.push(0.3 * z);
            vals.extend([3.0 * (t / 20.0).sin() + 0.3 * z, 1.0 + 0.3 * z]);
        }
        let time: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let d = CausalData::new(vec!["a".into(), "b".into()], Points::new("v", vals, 2).unwrap(), Some(time))
            .unwrap();
        let (w, rec) = prewhiten::<DefaultBackend>(&d, Prewhitening::Gp, &GpParams::default()).unwrap();
        assert_eq!(rec.method, "gp");
        assert!(rec.variables[0].variance_removed > 0.9, "{rec:?}");
        let rms = (w.iter().zip(&noise).map(|(p, e)| (p[0] - e).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!(rms < 0.1, "{rms}");
        // none, and no time index: unchanged and recorded
        let (same, r) = prewhiten::<DefaultBackend>(&d, Prewhitening::None, &GpParams::default()).unwrap();
        assert_eq!((&same, r.method.as_str()), (d.values(), "none"));
        let untimed = CausalData::new(d.names().to_vec(), d.values().clone(), None).unwrap();
        let (_, r) = prewhiten::<DefaultBackend>(&untimed, Prewhitening::Gp, &GpParams::default()).unwrap();
        assert!(r.note.unwrap().contains("no time index"));
        assert!(
            prewhiten::<DefaultBackend>(&d, Prewhitening::Ar { order: 60 }, &GpParams::default()).is_err()
        );
    }
}
