//! Convergence diagnostics and posterior summaries for several chains, following Vehtari, Gelman,
//! Simpson, Carpenter & Bürkner (2021), "Rank-normalization, folding, and localization: an improved
//! R̂ for assessing convergence of MCMC" (as implemented in Stan and the R package `posterior`):
//!
//! * **split-R̂**: every chain is split in half (the middle draw of an odd-length chain is dropped);
//!   `R̂ = √((B/W + N − 1)/N)` with `W` the mean within-half variance and `B/N` the variance of the
//!   half means. [`rhat`] reports the maximum of R̂ of the rank-normalised draws and of the
//!   rank-normalised folded draws `|x − median|` (which detects differences in scale).
//! * **ESS**: `S/τ̂` with `τ̂ = −1 + 2 Σ ρ̂_t` over Geyer's initial monotone sequence of the combined
//!   autocorrelations `ρ̂_t = 1 − (W − mean_c γ̂_{c,t})/var⁺`. The **bulk ESS** ([`ess_bulk`]) is that
//!   of the rank-normalised split chains, the **tail ESS** ([`ess_tail`]) the smaller of the ESS of the
//!   indicators `x ≤ q₀.₀₅` and `x ≤ q₀.₉₅`.
//! * Rank normalisation: `z = Φ⁻¹((r − 3/8)/(S + 1/4))` with `r` the average rank among all `S` draws.
//!
//! Quantiles are R's type 7 (linear interpolation between order statistics).

use crate::special::normal_quantile;

/// Posterior summary of one scalar quantity over several chains. JSON: `mean`, `sd`, `mcse_mean`,
/// `q05`, `q50`, `q95`, `rhat`, `ess` (bulk), `ess_tail` (NaN as `null`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Mean of all draws.
    pub mean: f64,
    /// Standard deviation of all draws.
    pub sd: f64,
    /// Monte-Carlo standard error of the mean, `sd/√ESS` with the ESS of the (not rank-normalised)
    /// split chains.
    pub mcse_mean: f64,
    /// 5% quantile.
    pub q05: f64,
    /// Median.
    pub q50: f64,
    /// 95% quantile.
    pub q95: f64,
    /// Rank-normalised split-R̂ (maximum of the plain and folded versions).
    pub rhat: f64,
    /// Bulk effective sample size.
    #[serde(rename = "ess")]
    pub ess_bulk: f64,
    /// Tail effective sample size (5% and 95% quantiles).
    pub ess_tail: f64,
}

impl Summary {
    /// Summarises `chains` (one slice of draws per chain, all of the same length ≥ 1).
    /// Diagnostics that need more draws (R̂ and ESS need ≥ 4 per chain) are NaN.
    pub fn new(chains: &[&[f64]]) -> Summary {
        let all: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
        let s = all.len() as f64;
        let mean = all.iter().sum::<f64>() / s;
        let sd = if all.len() > 1 {
            (all.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (s - 1.0)).sqrt()
        } else {
            f64::NAN
        };
        let mut sorted = all.clone();
        sorted.sort_by(f64::total_cmp);
        let split = split_chains(chains);
        let split_refs: Vec<&[f64]> = split.iter().map(Vec::as_slice).collect();
        Summary {
            mean,
            sd,
            mcse_mean: sd / ess_raw(&split_refs).sqrt(),
            q05: quantile_sorted(&sorted, 0.05),
            q50: quantile_sorted(&sorted, 0.5),
            q95: quantile_sorted(&sorted, 0.95),
            rhat: rhat(chains),
            ess_bulk: ess_bulk(chains),
            ess_tail: ess_tail(chains),
        }
    }
}

/// Quantile of already sorted values (R type 7); NaN when empty.
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Quantile of unsorted values (R type 7); NaN when empty.
pub fn quantile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    quantile_sorted(&v, p)
}

/// Each chain split into its first and second half (the middle draw of an odd length dropped).
fn split_chains(chains: &[&[f64]]) -> Vec<Vec<f64>> {
    let mut out = Vec::with_capacity(2 * chains.len());
    for c in chains {
        let n = c.len();
        if n < 2 {
            out.push(c.to_vec());
            continue;
        }
        let half = n / 2;
        out.push(c[..half].to_vec());
        out.push(c[n - half..].to_vec());
    }
    out
}

/// Rank-normalises all draws jointly: `Φ⁻¹((r − 3/8)/(S + 1/4))`, ties get their average rank.
fn rank_normalise(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let s = all.len();
    let mut idx: Vec<usize> = (0..s).collect();
    idx.sort_by(|&a, &b| all[a].total_cmp(&all[b]));
    let mut rank = vec![0.0; s];
    let mut i = 0;
    while i < s {
        let mut j = i;
        while j + 1 < s && all[idx[j + 1]] == all[idx[i]] {
            j += 1;
        }
        // 1-based ranks i+1..=j+1, averaged.
        let r = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            rank[idx[k]] = r;
        }
        i = j + 1;
    }
    let z: Vec<f64> = rank.iter().map(|r| normal_quantile((r - 0.375) / (s as f64 + 0.25))).collect();
    let mut out = Vec::with_capacity(chains.len());
    let mut at = 0;
    for c in chains {
        out.push(z[at..at + c.len()].to_vec());
        at += c.len();
    }
    out
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    (m, x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0))
}

/// Basic R̂ of chains given as they are (no splitting or normalisation).
fn rhat_raw(chains: &[&[f64]]) -> f64 {
    let n = chains.iter().map(|c| c.len()).min().unwrap_or(0);
    if chains.len() < 2 || n < 2 || chains.iter().any(|c| c.len() != n) {
        return f64::NAN;
    }
    let (means, vars): (Vec<f64>, Vec<f64>) = chains.iter().map(|c| mean_var(c)).unzip();
    let var_between = n as f64 * mean_var(&means).1;
    let var_within = vars.iter().sum::<f64>() / vars.len() as f64;
    let nf = n as f64;
    ((var_between / var_within + nf - 1.0) / nf).sqrt()
}

/// ESS of chains given as they are (no splitting or normalisation): Geyer's initial monotone
/// sequence estimator on the multi-chain autocorrelations (Vehtari et al. 2021, eq. (10)–(11)).
fn ess_raw(chains: &[&[f64]]) -> f64 {
    let m = chains.len();
    let n = chains.iter().map(|c| c.len()).min().unwrap_or(0);
    if m == 0 || n < 4 || chains.iter().any(|c| c.len() != n) {
        return f64::NAN;
    }
    let means: Vec<f64> = chains.iter().map(|c| c.iter().sum::<f64>() / n as f64).collect();
    // Mean over chains of the biased autocovariance at lag t.
    let acov = |t: usize| -> f64 {
        let mut s = 0.0;
        for (c, mu) in chains.iter().zip(&means) {
            let mut a = 0.0;
            for i in 0..n - t {
                a += (c[i] - mu) * (c[i + t] - mu);
            }
            s += a / n as f64;
        }
        s / m as f64
    };
    let nf = n as f64;
    let mean_var = acov(0) * nf / (nf - 1.0);
    let mut var_plus = mean_var * (nf - 1.0) / nf;
    if m > 1 {
        var_plus += mean_var_of(&means);
    }
    if !(var_plus > 0.0) || !var_plus.is_finite() {
        return f64::NAN;
    }
    let mut rho = vec![0.0; n];
    let mut t = 0;
    let mut rho_even = 1.0;
    rho[0] = rho_even;
    let mut rho_odd = 1.0 - (mean_var - acov(1)) / var_plus;
    rho[1] = rho_odd;
    while t + 5 < n && (rho_even + rho_odd).is_finite() && rho_even + rho_odd > 0.0 {
        t += 2;
        rho_even = 1.0 - (mean_var - acov(t)) / var_plus;
        rho_odd = 1.0 - (mean_var - acov(t + 1)) / var_plus;
        if rho_even + rho_odd >= 0.0 {
            rho[t] = rho_even;
            rho[t + 1] = rho_odd;
        }
    }
    let max_t = t;
    if rho_even > 0.0 {
        rho[max_t] = rho_even;
    }
    // Geyer's initial monotone sequence.
    let mut t = 0;
    while t + 4 <= max_t {
        t += 2;
        if rho[t] + rho[t + 1] > rho[t - 2] + rho[t - 1] {
            rho[t] = (rho[t - 2] + rho[t - 1]) / 2.0;
            rho[t + 1] = rho[t];
        }
    }
    let s = (m * n) as f64;
    let tau = (-1.0 + 2.0 * rho[..max_t].iter().sum::<f64>() + rho[max_t]).max(1.0 / s.log10());
    s / tau
}

fn mean_var_of(x: &[f64]) -> f64 {
    mean_var(x).1
}

fn as_refs(v: &[Vec<f64>]) -> Vec<&[f64]> {
    v.iter().map(Vec::as_slice).collect()
}

/// Rank-normalised split-R̂ (Vehtari et al. 2021): the larger of the R̂ of the rank-normalised split
/// chains and of the rank-normalised split folded chains `|x − median(x)|`. NaN with fewer than 4
/// draws per chain or constant draws.
pub fn rhat(chains: &[&[f64]]) -> f64 {
    if chains.is_empty() || chains.iter().any(|c| c.len() < 4) {
        return f64::NAN;
    }
    let split = split_chains(chains);
    let bulk = rhat_raw(&as_refs(&rank_normalise(&split)));
    let all: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
    let med = quantile(&all, 0.5);
    let folded: Vec<Vec<f64>> = split.iter().map(|c| c.iter().map(|v| (v - med).abs()).collect()).collect();
    let tail = rhat_raw(&as_refs(&rank_normalise(&folded)));
    bulk.max(tail)
}

/// Plain split-R̂ (no rank normalisation, no folding), Gelman et al. BDA3 §11.4.
pub fn split_rhat_basic(chains: &[&[f64]]) -> f64 {
    rhat_raw(&as_refs(&split_chains(chains)))
}

/// Bulk effective sample size: the ESS of the rank-normalised split chains.
pub fn ess_bulk(chains: &[&[f64]]) -> f64 {
    if chains.is_empty() || chains.iter().any(|c| c.len() < 4) {
        return f64::NAN;
    }
    ess_raw(&as_refs(&rank_normalise(&split_chains(chains))))
}

/// Effective sample size of the mean (split chains, no rank normalisation).
pub fn ess_mean(chains: &[&[f64]]) -> f64 {
    ess_raw(&as_refs(&split_chains(chains)))
}

/// Tail effective sample size: the smaller ESS of the indicators `x ≤ q₀.₀₅` and `x ≤ q₀.₉₅`.
pub fn ess_tail(chains: &[&[f64]]) -> f64 {
    if chains.is_empty() || chains.iter().any(|c| c.len() < 4) {
        return f64::NAN;
    }
    let all: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
    let split = split_chains(chains);
    [0.05, 0.95]
        .iter()
        .map(|&p| {
            let q = quantile(&all, p);
            let ind: Vec<Vec<f64>> =
                split.iter().map(|c| c.iter().map(|&v| f64::from(u8::from(v <= q))).collect()).collect();
            ess_raw(&as_refs(&ind))
        })
        .fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use rand_distr::StandardNormal;

    #[test]
    fn inverse_normal_cdf_known_values() {
        // Reference values (R: qnorm).
        for (p, z) in [
            (0.5, 0.0),
            (0.975, 1.959963984540054),
            (0.05, -1.644853626951472),
            (0.001, -3.090232306167813),
            (0.9999, 3.719016485455709),
            (0.3, -0.5244005127080407),
        ] {
            assert!((normal_quantile(p) - z).abs() < 1e-8, "p = {p}: {} vs {z}", normal_quantile(p));
        }
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
        assert!(normal_quantile(1.5).is_nan());
    }

    #[test]
    fn quantiles_are_type_7() {
        let v = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        // R: quantile(c(3,1,4,1,5,9,2,6), c(.05,.5,.95)) = 1.00 3.50 7.95
        assert!((quantile(&v, 0.05) - 1.0).abs() < 1e-12);
        assert!((quantile(&v, 0.5) - 3.5).abs() < 1e-12);
        assert!((quantile(&v, 0.95) - 7.95).abs() < 1e-12);
    }

    fn ar1(rng: &mut ChaCha8Rng, phi: f64, n: usize, shift: f64) -> Vec<f64> {
        let mut x = rng.sample::<f64, _>(StandardNormal);
        (0..n)
            .map(|_| {
                x = phi * x + (1.0 - phi * phi).sqrt() * rng.sample::<f64, _>(StandardNormal);
                x + shift
            })
            .collect()
    }

    /// ESS of AR(1) chains against the exact value S (1 − φ)/(1 + φ); R̂ ≈ 1 for well-mixed chains.
    #[test]
    fn ess_and_rhat_of_ar1_chains() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        // Relative standard error of an autocorrelation-time estimate truncated at lag M:
        // √(2(2M+1)/S) (Madras & Sokal 1988); with S = 80000 and M ≲ 3τ + 2 the tolerances below
        // are about 4 standard errors.
        for &(phi, tol) in &[(0.0, 0.05), (0.5, 0.08), (0.9, 0.2)] {
            let chains: Vec<Vec<f64>> = (0..4).map(|_| ar1(&mut rng, phi, 20000, 0.0)).collect();
            let refs = as_refs(&chains);
            let exact = 80000.0 * (1.0 - phi) / (1.0 + phi);
            let bulk = ess_bulk(&refs);
            let mean = ess_mean(&refs);
            for (what, e) in [("bulk", bulk), ("mean", mean)] {
                assert!((e / exact - 1.0).abs() < tol, "phi {phi}: {what} ESS {e} vs {exact}");
            }
            let r = rhat(&refs);
            assert!(r < 1.01, "phi {phi}: rhat {r}");
            // Indicators of an AR(1) are less autocorrelated than the process itself.
            let tail = ess_tail(&refs);
            assert!(tail > (1.0 - tol) * exact && tail < 82000.0, "phi {phi}: tail ESS {tail} vs {exact}");
        }
    }

    /// Chains stuck at different locations or scales give a large R̂.
    #[test]
    fn rhat_flags_disagreeing_chains() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let mut chains: Vec<Vec<f64>> = (0..4).map(|_| ar1(&mut rng, 0.3, 1000, 0.0)).collect();
        chains[3].iter_mut().for_each(|v| *v += 1.0);
        assert!(rhat(&as_refs(&chains)) > 1.1);
        // Same location, one chain with 4× the scale: only the folded R̂ sees it.
        let mut chains: Vec<Vec<f64>> = (0..4).map(|_| ar1(&mut rng, 0.3, 1000, 0.0)).collect();
        chains[0].iter_mut().for_each(|v| *v *= 4.0);
        assert!(rhat(&as_refs(&chains)) > 1.1);
        // A trend within chains: split-R̂ sees it even when all chains agree.
        let trend: Vec<Vec<f64>> = (0..4)
            .map(|_| {
                ar1(&mut rng, 0.3, 1000, 0.0).iter().enumerate().map(|(i, v)| v + i as f64 / 300.0).collect()
            })
            .collect();
        assert!(split_rhat_basic(&as_refs(&trend)) > 1.1);
    }

    #[test]
    fn summary_of_iid_normals() {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        let chains: Vec<Vec<f64>> = (0..4)
            .map(|_| (0..2500).map(|_| 2.0 + 3.0 * rng.sample::<f64, _>(StandardNormal)).collect())
            .collect();
        let s = Summary::new(&as_refs(&chains));
        let se = 3.0 / 100.0;
        assert!((s.mean - 2.0).abs() < 4.0 * se, "{s:?}");
        assert!((s.sd - 3.0).abs() < 4.0 * 3.0 / (2.0 * 10000f64).sqrt(), "{s:?}");
        assert!((s.mcse_mean - se).abs() < 0.1 * se, "{s:?}");
        // Quantile SE: √(p(1−p)/S)/φ(z_p) · σ ≈ 0.064 at p = 0.05.
        assert!((s.q05 - (2.0 - 3.0 * 1.6448536)).abs() < 0.3, "{s:?}");
        assert!((s.q50 - 2.0).abs() < 0.15, "{s:?}");
        assert!(s.rhat < 1.01 && s.ess_bulk > 8000.0, "{s:?}");
        // Degenerate inputs give NaN diagnostics, not panics.
        let short = Summary::new(&[&[1.0, 2.0][..]]);
        assert!(short.rhat.is_nan() && short.ess_bulk.is_nan());
        let constant = [1.0; 10];
        assert!(ess_mean(&[&constant[..], &constant[..]]).is_nan());
    }
}
