//! Tick positions on a log-10 axis. plotters labels only powers of ten, so an axis spanning less
//! than a decade or two (200 to 5000 simulations, 0.02 to 0.09 error) gets one label or none and
//! cannot be read. These ticks refine the mantissas until the range holds at least [`MIN_TICKS`],
//! and a range narrower than one digit step (1.1 to 1.9) gets evenly spaced round values.

/// The fewest labels an axis should carry.
const MIN_TICKS: usize = 3;
/// The most labels that fit along an axis.
const MAX_TICKS: usize = 9;
/// Mantissas tried in order: decades, then 1–2–5, then every digit.
const MANTISSAS: [&[f64]; 3] = [&[1.0], &[1.0, 2.0, 5.0], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]];

/// The labelled ticks on `[lo, hi]` (`0 < lo < hi`): powers of ten (every k-th one when there are
/// too many), or the first mantissa set that puts at least [`MIN_TICKS`] ticks in the range.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let mut best = Vec::new();
    for m in MANTISSAS {
        best = candidates(lo, hi, m);
        if best.len() >= MIN_TICKS {
            break;
        }
    }
    if best.len() < 2 {
        return linear(lo, hi);
    }
    let step = best.len().div_ceil(MAX_TICKS);
    best.into_iter().step_by(step).collect()
}

/// Round values `i · step` in `[lo, hi]`: the step 1, 2 or 5 times a power of ten, the largest not
/// below a quarter of the range that still puts [`MIN_TICKS`] values in it (a step just above a
/// quarter can leave one: 1.5 alone on `[1.06, 1.9]` with step 0.5).
fn linear(lo: f64, hi: f64) -> Vec<f64> {
    let raw = (hi - lo) / 4.0;
    let p = 10f64.powf(raw.log10().floor());
    let steps = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0].map(|m| m * p);
    let first = steps.iter().position(|s| *s >= raw).unwrap_or(steps.len() - 1);
    let mut ticks = Vec::new();
    for &step in steps[..=first].iter().rev() {
        let (i0, i1) = ((lo / step).ceil() as i64, (hi / step).floor() as i64);
        // As in `candidates`: a fractional step divides by its (whole) reciprocal to stay exact.
        let inverse = (1.0 / step).round();
        ticks = (i0..=i1).map(|i| if step < 1.0 { i as f64 / inverse } else { i as f64 * step }).collect();
        if ticks.len() >= MIN_TICKS {
            break;
        }
    }
    ticks
}

/// The faint grid lines: every digit of every decade in the range.
pub fn log_grid(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let all = candidates(lo, hi, MANTISSAS[2]);
    if all.len() > 60 { candidates(lo, hi, MANTISSAS[0]) } else { all }
}

/// `m · 10^k` in `[lo, hi]` for every mantissa `m`, ascending, rounded to the digits they mean.
fn candidates(lo: f64, hi: f64, mantissas: &[f64]) -> Vec<f64> {
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mut out = Vec::new();
    for k in k0..=k1 {
        let p = 10f64.powi(k);
        for &m in mantissas {
            // `m * 10^k` for negative k is inexact (3 * 0.01 = 0.030000000000000002); dividing by
            // the reciprocal keeps the tick at the decimal it names.
            let v = if k < 0 { m / 10f64.powi(-k) } else { m * p };
            if v >= lo * (1.0 - 1e-12) && v <= hi * (1.0 + 1e-12) {
                out.push(v);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_ranges_label_powers_of_ten_and_thin_them() {
        assert_eq!(log_ticks(0.5, 2000.0), vec![1.0, 10.0, 100.0, 1000.0]);
        let many = log_ticks(1e-20, 1e20);
        assert!(many.len() <= MAX_TICKS && many.len() >= MIN_TICKS, "{many:?}");
    }

    #[test]
    fn narrow_ranges_get_at_least_three_labels() {
        assert_eq!(log_ticks(200.0, 5000.0), vec![200.0, 500.0, 1000.0, 2000.0, 5000.0]);
        assert_eq!(log_ticks(0.021, 0.089), vec![0.03, 0.04, 0.05, 0.06, 0.07, 0.08]);
        assert_eq!(log_ticks(1.1, 1.9), vec![1.2, 1.4, 1.6, 1.8]);
        for (lo, hi) in [(1.1, 1.9), (0.31, 0.42), (7.0e4, 9.5e4), (0.55, 4.5), (0.0123, 0.0127)] {
            let t = log_ticks(lo, hi);
            assert!(t.iter().all(|v| (lo..=hi).contains(v)), "{t:?} outside [{lo}, {hi}]");
            assert!(t.len() >= 2 && t.len() <= MAX_TICKS, "{lo}..{hi}: {t:?}");
        }
        // a step just above a quarter of the range used to leave one label (1.5 on [1.06, 1.9])
        assert_eq!(log_ticks(1.06, 1.9), vec![1.2, 1.4, 1.6, 1.8]);
        for k in 0..200 {
            let lo = 1.0 + 0.004 * f64::from(k);
            let hi = lo * 1.8;
            let t = log_ticks(lo, hi);
            assert!(t.len() >= 2 && t.len() <= MAX_TICKS, "{lo}..{hi}: {t:?}");
            assert!(t.iter().all(|v| (lo..=hi).contains(v)), "{t:?} outside [{lo}, {hi}]");
        }
    }

    #[test]
    fn degenerate_ranges_have_no_ticks() {
        assert!(log_ticks(0.0, 1.0).is_empty() && log_ticks(2.0, 1.0).is_empty());
        assert!(log_ticks(1.0, f64::INFINITY).is_empty());
    }
}
