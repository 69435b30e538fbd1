//! Warmup adaptation, as in Stan (Hoffman & Gelman 2014, §3.2; Stan Reference Manual, "HMC
//! algorithm parameters"):
//!
//! * **Step size** by Nesterov dual averaging towards a target mean acceptance statistic δ:
//!   `s̄_t = (1 − 1/(t+t₀)) s̄_{t−1} + (δ − a_t)/(t+t₀)`, `log ε_t = μ − √t s̄_t / γ`,
//!   `log ε̄_t = t^{−κ} log ε_t + (1 − t^{−κ}) log ε̄_{t−1}`, with `μ = log(10 ε₀)`, γ = 0.05, t₀ = 10,
//!   κ = 0.75. After warmup the sampler uses `ε̄`.
//! * **Diagonal inverse metric** (the estimated posterior variances) from the draws in a sequence of
//!   doubling windows: an initial fast buffer (75 iterations, step size only), slow windows of 25, 50,
//!   100, … iterations (the last one stretched to the terminal buffer), and a terminal fast buffer (50
//!   iterations). At the end of each slow window the variance estimate is regularised towards 10⁻³,
//!   `v ← n/(n+5) v + 10⁻³ · 5/(n+5)`, the step size is re-initialised and dual averaging restarts.

/// Dual-averaging step-size adaptation (Nesterov 2009; Hoffman & Gelman 2014, Algorithm 5).
#[derive(Debug, Clone)]
pub(crate) struct DualAveraging {
    mu: f64,
    target: f64,
    counter: f64,
    s_bar: f64,
    x_bar: f64,
}

/// γ of dual averaging (Stan's default).
const GAMMA: f64 = 0.05;
/// t₀ of dual averaging (Stan's default).
const T0: f64 = 10.0;
/// κ of dual averaging (Stan's default).
const KAPPA: f64 = 0.75;

impl DualAveraging {
    /// Starts adaptation around the step size `eps` (`μ = log(10 ε)`) towards acceptance `target`.
    pub(crate) fn new(eps: f64, target: f64) -> Self {
        Self { mu: (10.0 * eps).ln(), target, counter: 0.0, s_bar: 0.0, x_bar: 0.0 }
    }

    /// Restarts around a new step size.
    pub(crate) fn restart(&mut self, eps: f64) {
        *self = Self::new(eps, self.target);
    }

    /// Feeds one acceptance statistic; returns the next step size `ε_t`.
    pub(crate) fn update(&mut self, accept_stat: f64) -> f64 {
        // A NaN statistic (cannot happen with a finite initial energy) counts as a rejection.
        let a = if accept_stat.is_nan() { 0.0 } else { accept_stat.min(1.0) };
        self.counter += 1.0;
        let eta = 1.0 / (self.counter + T0);
        self.s_bar = (1.0 - eta) * self.s_bar + eta * (self.target - a);
        let x = self.mu - self.s_bar * self.counter.sqrt() / GAMMA;
        let x_eta = self.counter.powf(-KAPPA);
        self.x_bar = (1.0 - x_eta) * self.x_bar + x_eta * x;
        x.exp()
    }

    /// The averaged step size `ε̄` used after warmup.
    pub(crate) fn final_step_size(&self) -> f64 {
        self.x_bar.exp()
    }
}

/// Stan's windowed adaptation schedule for the metric, with a Welford variance estimator.
#[derive(Debug, Clone)]
pub(crate) struct WindowedVariance {
    warmup: usize,
    init_buffer: usize,
    term_buffer: usize,
    window_size: usize,
    next_window_end: usize,
    counter: usize,
    enabled: bool,
    n: usize,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

impl WindowedVariance {
    /// The schedule for `warmup` iterations with Stan's buffers (75 / 25 / 50 by default). Short warmups
    /// are rescaled as in Stan (15% / 75% / 10%); under 20 iterations the metric is not adapted.
    pub(crate) fn new(
        dim: usize,
        warmup: usize,
        init_buffer: usize,
        base_window: usize,
        term_buffer: usize,
    ) -> Self {
        let (mut init_buffer, mut base_window, mut term_buffer) = (init_buffer, base_window, term_buffer);
        let enabled = warmup >= 20;
        if enabled && init_buffer + base_window + term_buffer > warmup {
            init_buffer = (0.15 * warmup as f64) as usize;
            term_buffer = (0.1 * warmup as f64) as usize;
            base_window = warmup - (init_buffer + term_buffer);
        }
        Self {
            warmup,
            init_buffer,
            term_buffer,
            window_size: base_window,
            next_window_end: init_buffer + base_window - 1,
            counter: 0,
            enabled,
            n: 0,
            mean: vec![0.0; dim],
            m2: vec![0.0; dim],
        }
    }

    fn in_window(&self) -> bool {
        self.counter >= self.init_buffer
            && self.counter < self.warmup - self.term_buffer
            && self.counter != self.warmup
    }

    fn window_ends(&self) -> bool {
        self.counter == self.next_window_end && self.counter != self.warmup
    }

    fn compute_next_window(&mut self) {
        let last_end = self.warmup - self.term_buffer - 1;
        if self.next_window_end == last_end {
            return;
        }
        self.window_size *= 2;
        self.next_window_end = self.counter + self.window_size;
        if self.next_window_end != last_end {
            let boundary = self.next_window_end + 2 * self.window_size;
            if boundary >= self.warmup - self.term_buffer {
                self.next_window_end = last_end;
            }
        }
    }

    /// Feeds the position after one warmup iteration. At the end of a slow window writes the
    /// regularised variance estimate into `inv_metric` and returns `true`.
    pub(crate) fn learn(&mut self, q: &[f64], inv_metric: &mut [f64]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.in_window() {
            self.n += 1;
            let n = self.n as f64;
            for i in 0..q.len() {
                let d = q[i] - self.mean[i];
                self.mean[i] += d / n;
                self.m2[i] += d * (q[i] - self.mean[i]);
            }
        }
        if self.window_ends() {
            self.compute_next_window();
            let n = self.n as f64;
            if self.n > 1 {
                for i in 0..q.len() {
                    let var = self.m2[i] / (n - 1.0);
                    inv_metric[i] = (n / (n + 5.0)) * var + 1e-3 * (5.0 / (n + 5.0));
                }
            }
            self.n = 0;
            self.mean.iter_mut().for_each(|v| *v = 0.0);
            self.m2.iter_mut().for_each(|v| *v = 0.0);
            self.counter += 1;
            return true;
        }
        self.counter += 1;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Window ends for Stan's default 1000 warmup iterations: 75 + 25 + 50 + 100 + 200 + 500 + 50.
    #[test]
    fn stan_default_windows() {
        let mut w = WindowedVariance::new(1, 1000, 75, 25, 50);
        let mut ends = vec![];
        let mut m = vec![1.0];
        for it in 0..1000 {
            if w.learn(&[it as f64], &mut m) {
                ends.push(it);
            }
        }
        assert_eq!(ends, vec![99, 149, 249, 449, 949]);
        // The last window averages iterations 450..=949: variance of 450..949 (n = 500).
        let n = 500.0;
        let var = n * (n + 1.0) / 12.0;
        let expect = n / (n + 5.0) * var + 1e-3 * 5.0 / (n + 5.0);
        assert!((m[0] - expect).abs() < 1e-9 * expect, "{} vs {expect}", m[0]);
    }

    #[test]
    fn short_warmup_rescales_windows() {
        // 100 iterations: 15 / 75 / 10 → a single slow window ending at 89.
        let mut w = WindowedVariance::new(1, 100, 75, 25, 50);
        let mut m = vec![1.0];
        let ends: Vec<usize> = (0..100).filter(|&it| w.learn(&[it as f64], &mut m)).collect();
        assert_eq!(ends, vec![89]);
        let mut w = WindowedVariance::new(1, 10, 75, 25, 50);
        assert!((0..10).all(|it| !w.learn(&[it as f64], &mut m)));
    }

    #[test]
    fn dual_averaging_finds_the_step_size_of_a_known_acceptance_curve() {
        // Acceptance exp(−ε²) as a function of the step size: target 0.8 at ε = √(−ln 0.8).
        let mut da = DualAveraging::new(1.0, 0.8);
        let mut eps: f64 = 1.0;
        for _ in 0..2000 {
            eps = da.update((-eps * eps).exp());
        }
        let want = (-(0.8f64).ln()).sqrt();
        assert!((da.final_step_size() - want).abs() < 0.02 * want, "{} vs {want}", da.final_step_size());
    }
}
