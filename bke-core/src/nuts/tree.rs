//! The trajectory of one NUTS transition (see the [module docs](super)): phase-space points, the
//! leapfrog integrator, the recursive tree builder with multinomial sampling and the generalised
//! no-U-turn criterion, and the per-chain sampler state.

use super::target::Target;
use crate::CoreError;
use crate::numeric::{dot, log_add_exp};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// A point in phase space with the log density and its gradient at `q`.
#[derive(Debug, Clone)]
pub(super) struct PsPoint {
    pub(super) q: Vec<f64>,
    pub(super) p: Vec<f64>,
    pub(super) grad: Vec<f64>,
    pub(super) logp: f64,
}

impl PsPoint {
    pub(super) fn new(dim: usize) -> Self {
        Self { q: vec![0.0; dim], p: vec![0.0; dim], grad: vec![0.0; dim], logp: 0.0 }
    }

    fn copy_from(&mut self, o: &PsPoint) {
        self.q.copy_from_slice(&o.q);
        self.p.copy_from_slice(&o.p);
        self.grad.copy_from_slice(&o.grad);
        self.logp = o.logp;
    }
}

/// Per-depth scratch of the tree recursion, allocated once per chain.
#[derive(Debug, Clone)]
pub(super) struct Level {
    p_sharp_init_end: Vec<f64>,
    p_init_end: Vec<f64>,
    rho_init: Vec<f64>,
    p_sharp_final_beg: Vec<f64>,
    p_final_beg: Vec<f64>,
    rho_final: Vec<f64>,
    rho_ext: Vec<f64>,
    z_propose_final: PsPoint,
}

impl Level {
    fn new(dim: usize) -> Self {
        let z = || vec![0.0; dim];
        Self {
            p_sharp_init_end: z(),
            p_init_end: z(),
            rho_init: z(),
            p_sharp_final_beg: z(),
            p_final_beg: z(),
            rho_final: z(),
            rho_ext: z(),
            z_propose_final: PsPoint::new(dim),
        }
    }
}

/// Evaluates the model at `z.q` into `z.logp`/`z.grad`; failures give `logp = −∞`.
pub(super) fn evaluate<M: Target + ?Sized>(model: &M, z: &mut PsPoint) -> Result<(), CoreError> {
    match model.log_density_grad(&z.q, &mut z.grad) {
        Ok(lp) if lp.is_finite() && z.grad.iter().all(|g| g.is_finite()) => {
            z.logp = lp;
            Ok(())
        }
        Ok(lp) => {
            z.logp = f64::NEG_INFINITY;
            Err(CoreError::InvalidParameter {
                name: "log density".into(),
                value: lp,
                reason: if lp.is_finite() {
                    "the gradient is not finite".into()
                } else {
                    "the log density is not finite".into()
                },
            })
        }
        Err(e) => {
            z.logp = f64::NEG_INFINITY;
            Err(e)
        }
    }
}

/// The generalised no-U-turn criterion: `p♯₋·ρ > 0 and p♯₊·ρ > 0`.
fn criterion(p_sharp_minus: &[f64], p_sharp_plus: &[f64], rho: &[f64]) -> bool {
    dot(p_sharp_plus, rho) > 0.0 && dot(p_sharp_minus, rho) > 0.0
}

/// The statistics of one transition.
#[derive(Debug, Clone, Copy)]
pub(super) struct TransitionStats {
    pub(super) accept_stat: f64,
    pub(super) depth: usize,
    pub(super) n_leapfrog: usize,
    pub(super) divergent: bool,
    /// `H` of the new draw with its momentum.
    pub(super) energy: f64,
}

/// The integrator and tree builder of one chain: step size, metric, RNG and transition counters.
pub(super) struct Tree<'m, M: Target + ?Sized> {
    pub(super) model: &'m M,
    pub(super) dim: usize,
    pub(super) eps: f64,
    pub(super) inv_metric: Vec<f64>,
    pub(super) max_energy_error: f64,
    pub(super) rng: ChaCha8Rng,
    pub(super) n_leapfrog: usize,
    pub(super) sum_metro_prob: f64,
    pub(super) divergent: bool,
}

/// Mutable references to the outputs of one `build_tree` call.
struct TreeOut<'a> {
    z_propose: &'a mut PsPoint,
    p_sharp_beg: &'a mut [f64],
    p_sharp_end: &'a mut [f64],
    rho: &'a mut [f64],
    p_beg: &'a mut [f64],
    p_end: &'a mut [f64],
}

impl<M: Target + ?Sized> Tree<'_, M> {
    /// The Hamiltonian `−log π(q) + ½ pᵀ M⁻¹ p`; ∞ where the log density failed.
    pub(super) fn hamiltonian(&self, z: &PsPoint) -> f64 {
        let kinetic = 0.5 * z.p.iter().zip(&self.inv_metric).map(|(p, m)| m * p * p).sum::<f64>();
        let h = -z.logp + kinetic;
        if h.is_nan() { f64::INFINITY } else { h }
    }

    /// Draws `p ~ N(0, M)`.
    pub(super) fn sample_momentum(&mut self, z: &mut PsPoint) {
        for (p, m) in z.p.iter_mut().zip(&self.inv_metric) {
            let n: f64 = self.rng.sample(StandardNormal);
            *p = n / m.sqrt();
        }
    }

    /// One leapfrog step of size `eps` (negative: backwards in time).
    pub(super) fn leapfrog(&self, z: &mut PsPoint, eps: f64) {
        for i in 0..self.dim {
            z.p[i] += 0.5 * eps * z.grad[i];
            z.q[i] += eps * self.inv_metric[i] * z.p[i];
        }
        if evaluate(self.model, z).is_ok() {
            for i in 0..self.dim {
                z.p[i] += 0.5 * eps * z.grad[i];
            }
        }
    }

    /// Stan's step-size heuristic: from the current `ε`, double (or halve) it until the acceptance
    /// probability `exp(H₀ − H)` of one leapfrog step from `z` (fresh momentum each time) crosses 0.8.
    /// `z` is left unchanged.
    fn init_step_size(&mut self, z: &mut PsPoint) -> Result<(), CoreError> {
        let z_init = z.clone();
        let log08 = 0.8f64.ln();
        let mut direction = 0i32;
        let result = loop {
            z.copy_from(&z_init);
            self.sample_momentum(z);
            let h0 = self.hamiltonian(z);
            self.leapfrog(z, self.eps);
            let delta = h0 - self.hamiltonian(z);
            if direction == 0 {
                direction = if delta > log08 { 1 } else { -1 };
                continue;
            }
            if (direction == 1 && !(delta > log08)) || (direction == -1 && !(delta < log08)) {
                break Ok(());
            }
            self.eps = if direction == 1 { 2.0 * self.eps } else { 0.5 * self.eps };
            if self.eps > 1e7 {
                break Err(CoreError::Sampler(
                    "the step size grew beyond 1e7 while searching for an acceptable one: the posterior is \
                     probably improper (too flat); add or tighten the priors"
                        .into(),
                ));
            }
            if self.eps < 1e-300 {
                break Err(CoreError::Sampler(
                    "no acceptably small step size could be found: the log density is probably not \
                     continuous, or its gradient is wrong"
                        .into(),
                ));
            }
        };
        z.copy_from(&z_init);
        result
    }

    /// Builds a subtree of `2^depth` leapfrog steps from `z` in direction `sign`; returns whether it is
    /// valid (no divergence, no U-turn inside). `levels` holds the scratch of depths `1..=depth`.
    #[allow(clippy::too_many_arguments)]
    fn build_tree(
        &mut self,
        depth: usize,
        levels: &mut [Level],
        z: &mut PsPoint,
        out: TreeOut<'_>,
        h0: f64,
        sign: f64,
        log_sum_weight: &mut f64,
    ) -> bool {
        if depth == 0 {
            self.leapfrog(z, sign * self.eps);
            self.n_leapfrog += 1;
            let h = self.hamiltonian(z);
            if h - h0 > self.max_energy_error {
                self.divergent = true;
            }
            *log_sum_weight = log_add_exp(*log_sum_weight, h0 - h);
            self.sum_metro_prob += if h0 - h > 0.0 { 1.0 } else { (h0 - h).exp() };
            out.z_propose.copy_from(z);
            for i in 0..self.dim {
                let ps = self.inv_metric[i] * z.p[i];
                out.p_sharp_beg[i] = ps;
                out.p_sharp_end[i] = ps;
                out.rho[i] += z.p[i];
                out.p_beg[i] = z.p[i];
                out.p_end[i] = z.p[i];
            }
            return !self.divergent;
        }
        let (lvl, lower) = levels.split_last_mut().expect("levels has `depth` entries");
        // The initial subtree.
        let mut log_sum_weight_init = f64::NEG_INFINITY;
        lvl.rho_init.iter_mut().for_each(|v| *v = 0.0);
        let valid_init = self.build_tree(
            depth - 1,
            lower,
            z,
            TreeOut {
                z_propose: out.z_propose,
                p_sharp_beg: out.p_sharp_beg,
                p_sharp_end: &mut lvl.p_sharp_init_end,
                rho: &mut lvl.rho_init,
                p_beg: out.p_beg,
                p_end: &mut lvl.p_init_end,
            },
            h0,
            sign,
            &mut log_sum_weight_init,
        );
        if !valid_init {
            return false;
        }
        // The final subtree.
        let mut log_sum_weight_final = f64::NEG_INFINITY;
        lvl.rho_final.iter_mut().for_each(|v| *v = 0.0);
        let valid_final = self.build_tree(
            depth - 1,
            lower,
            z,
            TreeOut {
                z_propose: &mut lvl.z_propose_final,
                p_sharp_beg: &mut lvl.p_sharp_final_beg,
                p_sharp_end: out.p_sharp_end,
                rho: &mut lvl.rho_final,
                p_beg: &mut lvl.p_final_beg,
                p_end: out.p_end,
            },
            h0,
            sign,
            &mut log_sum_weight_final,
        );
        if !valid_final {
            return false;
        }
        // Uniform progressive sampling between the two halves.
        let log_sum_weight_subtree = log_add_exp(log_sum_weight_init, log_sum_weight_final);
        *log_sum_weight = log_add_exp(*log_sum_weight, log_sum_weight_subtree);
        if log_sum_weight_final > log_sum_weight_subtree {
            out.z_propose.copy_from(&lvl.z_propose_final);
        } else {
            let accept = (log_sum_weight_final - log_sum_weight_subtree).exp();
            if self.rng.random::<f64>() < accept {
                out.z_propose.copy_from(&lvl.z_propose_final);
            }
        }
        // ρ of the subtree, added to the caller's running sum; the U-turn criterion over the subtree
        // and across the seam between its halves.
        for i in 0..self.dim {
            let r = lvl.rho_init[i] + lvl.rho_final[i];
            out.rho[i] += r;
            lvl.rho_ext[i] = r;
        }
        let mut persist = criterion(out.p_sharp_beg, out.p_sharp_end, &lvl.rho_ext);
        for i in 0..self.dim {
            lvl.rho_ext[i] = lvl.rho_init[i] + lvl.p_final_beg[i];
        }
        persist &= criterion(out.p_sharp_beg, &lvl.p_sharp_final_beg, &lvl.rho_ext);
        for i in 0..self.dim {
            lvl.rho_ext[i] = lvl.rho_final[i] + lvl.p_init_end[i];
        }
        persist &= criterion(&lvl.p_sharp_init_end, out.p_sharp_end, &lvl.rho_ext);
        persist
    }
}

/// The settings of [`super::NutsParams`] the trajectory builder uses.
pub(super) struct Settings {
    /// The starting step size `ε` (before any adaptation).
    pub initial_step_size: f64,
    /// The energy error `H − H₀` past which a trajectory is divergent.
    pub max_energy_error: f64,
    /// The maximum tree depth.
    pub max_depth: usize,
}

/// One end of the trajectory: its outermost point, the momenta (and `M⁻¹p`) at its outer end and
/// at its inner end (the seam with the other half), and the sum `ρ` of the momenta of this half.
struct End {
    z: PsPoint,
    p_outer: Vec<f64>,
    p_sharp_outer: Vec<f64>,
    p_inner: Vec<f64>,
    p_sharp_inner: Vec<f64>,
    rho: Vec<f64>,
}

impl End {
    fn new(start: &PsPoint) -> Self {
        let v = || vec![0.0; start.q.len()];
        Self {
            z: start.clone(),
            p_outer: v(),
            p_sharp_outer: v(),
            p_inner: v(),
            p_sharp_inner: v(),
            rho: v(),
        }
    }
}

/// The state of one chain: the tree builder, the current state and the trajectory buffers.
pub(super) struct Sampler<'m, M: Target + ?Sized> {
    pub(super) tree: Tree<'m, M>,
    max_depth: usize,
    /// The integrator's moving point.
    z: PsPoint,
    /// The current state (the last draw).
    pub(super) z_sample: PsPoint,
    /// The forward end of the trajectory.
    fwd: End,
    /// The backward end of the trajectory.
    bck: End,
    z_propose: PsPoint,
    rho: Vec<f64>,
    rho_ext: Vec<f64>,
    levels: Vec<Level>,
}

impl<'m, M: Target + ?Sized> Sampler<'m, M> {
    pub(super) fn new(model: &'m M, params: &Settings, rng: ChaCha8Rng, start: &PsPoint) -> Self {
        let dim = model.dim();
        let v = || vec![0.0; dim];
        Self {
            tree: Tree {
                model,
                dim,
                eps: params.initial_step_size,
                inv_metric: vec![1.0; dim],
                max_energy_error: params.max_energy_error,
                rng,
                n_leapfrog: 0,
                sum_metro_prob: 0.0,
                divergent: false,
            },
            max_depth: params.max_depth,
            z: start.clone(),
            z_sample: start.clone(),
            fwd: End::new(start),
            bck: End::new(start),
            z_propose: start.clone(),
            rho: v(),
            rho_ext: v(),
            levels: (0..params.max_depth).map(|_| Level::new(dim)).collect(),
        }
    }

    /// Extends the trajectory at its forward (`forward`) or backward end by a subtree of `2^depth`
    /// leapfrog steps; the old trajectory becomes the other half. Whether the subtree is valid.
    fn extend(&mut self, forward: bool, depth: usize, h0: f64, log_sum_weight_subtree: &mut f64) -> bool {
        let (this, other, direction) =
            if forward { (&mut self.fwd, &mut self.bck, 1.0) } else { (&mut self.bck, &mut self.fwd, -1.0) };
        self.z.copy_from(&this.z);
        other.rho.copy_from_slice(&self.rho);
        other.p_inner.copy_from_slice(&this.p_inner);
        other.p_sharp_inner.copy_from_slice(&this.p_sharp_inner);
        let valid = self.tree.build_tree(
            depth,
            &mut self.levels[..depth],
            &mut self.z,
            TreeOut {
                z_propose: &mut self.z_propose,
                p_sharp_beg: &mut this.p_sharp_inner,
                p_sharp_end: &mut this.p_sharp_outer,
                rho: &mut this.rho,
                p_beg: &mut this.p_inner,
                p_end: &mut this.p_outer,
            },
            h0,
            direction,
            log_sum_weight_subtree,
        );
        this.z.copy_from(&self.z);
        valid
    }

    /// Re-runs the step-size heuristic at the current state.
    pub(super) fn init_step_size(&mut self) -> Result<(), CoreError> {
        self.tree.init_step_size(&mut self.z_sample)
    }

    /// One NUTS transition from the current state `z_sample`, which it replaces by the next draw.
    pub(super) fn transition(&mut self) -> TransitionStats {
        let dim = self.tree.dim;
        self.z.copy_from(&self.z_sample);
        self.tree.sample_momentum(&mut self.z);
        self.fwd.z.copy_from(&self.z);
        self.bck.z.copy_from(&self.z);
        self.z_sample.copy_from(&self.z);
        for i in 0..dim {
            let p = self.z.p[i];
            let ps = self.tree.inv_metric[i] * p;
            self.fwd.p_outer[i] = p;
            self.fwd.p_inner[i] = p;
            self.bck.p_inner[i] = p;
            self.bck.p_outer[i] = p;
            self.fwd.p_sharp_outer[i] = ps;
            self.fwd.p_sharp_inner[i] = ps;
            self.bck.p_sharp_inner[i] = ps;
            self.bck.p_sharp_outer[i] = ps;
            self.rho[i] = p;
        }
        let mut log_sum_weight = 0.0;
        let h0 = self.tree.hamiltonian(&self.z);
        self.tree.n_leapfrog = 0;
        self.tree.sum_metro_prob = 0.0;
        self.tree.divergent = false;
        let mut depth = 0;
        while depth < self.max_depth {
            self.fwd.rho.iter_mut().for_each(|v| *v = 0.0);
            self.bck.rho.iter_mut().for_each(|v| *v = 0.0);
            let mut log_sum_weight_subtree = f64::NEG_INFINITY;
            let forward = self.tree.rng.random::<f64>() > 0.5;
            let valid = self.extend(forward, depth, h0, &mut log_sum_weight_subtree);
            if !valid {
                break;
            }
            depth += 1;
            // Biased progressive sampling: move to the new subtree with probability
            // min(1, w_subtree / w_old).
            if log_sum_weight_subtree > log_sum_weight {
                self.z_sample.copy_from(&self.z_propose);
            } else {
                let accept = (log_sum_weight_subtree - log_sum_weight).exp();
                if self.tree.rng.random::<f64>() < accept {
                    self.z_sample.copy_from(&self.z_propose);
                }
            }
            log_sum_weight = log_add_exp(log_sum_weight, log_sum_weight_subtree);
            for i in 0..dim {
                self.rho[i] = self.bck.rho[i] + self.fwd.rho[i];
            }
            // The no-U-turn criterion over the whole trajectory ...
            let mut persist = criterion(&self.bck.p_sharp_outer, &self.fwd.p_sharp_outer, &self.rho);
            // ... and across the seam between its backward and forward halves.
            for i in 0..dim {
                self.rho_ext[i] = self.bck.rho[i] + self.fwd.p_inner[i];
            }
            persist &= criterion(&self.bck.p_sharp_outer, &self.fwd.p_sharp_inner, &self.rho_ext);
            for i in 0..dim {
                self.rho_ext[i] = self.fwd.rho[i] + self.bck.p_inner[i];
            }
            persist &= criterion(&self.bck.p_sharp_inner, &self.fwd.p_sharp_outer, &self.rho_ext);
            if !persist {
                break;
            }
        }
        let t = &self.tree;
        TransitionStats {
            accept_stat: if t.n_leapfrog > 0 { t.sum_metro_prob / t.n_leapfrog as f64 } else { 0.0 },
            depth,
            n_leapfrog: t.n_leapfrog,
            divergent: t.divergent,
            energy: t.hamiltonian(&self.z_sample),
        }
    }
}
