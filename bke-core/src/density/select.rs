//! Hyperparameter selection for the kernel student-t density by K-fold cross-validated log-likelihood
//! of the *normalised* density (the quantity a density estimate is judged by; it is proper because
//! every candidate is normalised on the same box).
//!
//! Candidates: a stationary kernel family with ARD lengthscales `ℓ_d = c · sd_d` (one scale factor
//! `c` per candidate, `sd_d` the standard deviation of dimension `d` of the data), times grids of
//! `σ₀²`, `β` and `α = d − 1 + a`. For each fold and each `c`, the training Gram matrix is
//! eigendecomposed once, `K = U Λ Uᵀ`, and `Uᵀ k_x` is formed for every quadrature node and
//! validation point (O(N³ + (G + N_v) N²)); every `(σ₀², β)` then costs O(N) per point:
//! with `ũ = Uᵀ1`, `ṽ = Uᵀk_x − Λũ/(N+β)`, `d_i = 1/(λ_i + σ₀²)`, `ρ = σ₀²/β`,
//! `vᵀ(A + ρ11ᵀ)⁻¹v = Σ ṽ_i² d_i − ρ (Σ ṽ_i ũ_i d_i)² / (1 + ρ Σ ũ_i² d_i)` (the spectral form of the
//! Woodbury expression used by [`super::KernelStudentT`]), and every `α` O(1) per point. The
//! normaliser of each candidate (on the whole space: the box and its Cauchy tails, as in
//! `density::normalise`) uses fixed composite Gauss–Legendre rules (`search_panels` per dimension
//! on the core of the box, graded panels beyond it on a wide box, a third (1-D) or a fifth (2-D) of
//! `search_panels` per tail segment; `density::tails`). Folds come from a seeded permutation.
//!
//! **Unresolved candidates.** A fixed rule cannot resolve every candidate: a large `α` (a large
//! exponent `(1+N+α)/2`) with a small `σ₀²` puts peaks at the data far narrower than the nodes are
//! apart, the rule sees only the floor, the estimated normaliser is too small by the peaks' mass,
//! and the held-out score is inflated by exactly that error. The maximum over candidates then
//! *seeks* the worst-resolved corner (on a wide box, held-out log-likelihoods no normalised density
//! could have). So every
//! candidate's box estimate is checked, in every fold, against the rigorous lower bound of the
//! `density::bound` module docs at the densest evaluated point of the box (nodes, held-out and
//! training points); a candidate below it is left out (`cv_log_lik = −∞`, counted in
//! [`Selection::unresolved`], and noted).

use super::bound::LowerBound;
use super::domain::Domain;
use super::niw::NiwParams;
use super::tails::{Grid, TailWeight, core_of};
use crate::budget::Bytes;
use crate::estimator::Progress;
use crate::numeric::log_sum_exp;
use crate::{CoreError, Kernel, KernelFamily, Points};
use bke_linalg::{Backend, Mat, Trans};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// The search of [`select_hyperparameters`]: grids, folds, the normalisation box and the search
/// quadrature (the `select` part of [`super::KernelStudentTParams`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SelectOptions {
    /// Lengthscale factors `c` (`ℓ_d = c · sd_d`). Default 14 values log-spaced in `[0.03, 10]`.
    pub lengthscale_factors: Vec<f64>,
    /// `σ₀²` grid. Default `10^{−1}, 10^{−0.5}, …, 10^{3.5}` (11 values).
    pub sigma0_sq: Vec<f64>,
    /// `β` grid. Default `{0.01, 1, 100}`.
    pub beta: Vec<f64>,
    /// Offsets `a` of `α = d − 1 + a` (`a > 0`). Default `{0.01, 0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000}`.
    pub alpha_offsets: Vec<f64>,
    /// Number of folds, `2 ≤ folds ≤ n` (`n`: leave-one-out). Default `5`.
    pub folds: usize,
    /// Seed of the fold permutation. Default `0`.
    pub seed: u64,
    /// The normalisation domain (normally from [`Domain::around`] all the data).
    pub domain: Option<Domain>,
    /// Margin for the default domain (fraction of the range on each side). Default `0.25`.
    pub margin: f64,
    /// Panels per dimension of the search quadrature. Default `48` in 1-D, `10` in 2-D (`0` = auto).
    pub search_panels: usize,
    /// Gauss–Legendre order of the search quadrature. Default `8`.
    pub order: usize,
    /// Base scales `s_d` of the lengthscales `ℓ_d = c · s_d` (one value: isotropic in every
    /// dimension). Default `None`: the per-dimension standard deviations of the data.
    pub scales: Option<Vec<f64>>,
}

impl Default for SelectOptions {
    fn default() -> Self {
        let logspace = |a: f64, b: f64, n: usize| -> Vec<f64> {
            (0..n).map(|i| (a.ln() + (b.ln() - a.ln()) * i as f64 / (n - 1) as f64).exp()).collect()
        };
        Self {
            lengthscale_factors: logspace(0.03, 10.0, 14),
            sigma0_sq: (0..11).map(|i| 10f64.powf(-1.0 + 0.5 * i as f64)).collect(),
            beta: vec![0.01, 1.0, 100.0],
            alpha_offsets: vec![0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0],
            folds: 5,
            seed: 0,
            domain: None,
            margin: 0.25,
            search_panels: 0,
            order: 8,
            scales: None,
        }
    }
}

impl SelectOptions {
    /// Validates the grids (non-empty, positive, finite) and the fold count (≥ 2).
    pub fn check(&self) -> Result<(), CoreError> {
        for (name, g) in [
            ("lengthscale factor", &self.lengthscale_factors),
            ("sigma0_sq", &self.sigma0_sq),
            ("beta", &self.beta),
            ("alpha offset", &self.alpha_offsets),
        ] {
            if g.is_empty() {
                return Err(CoreError::Empty { what: format!("{name} grid"), needed: 1 });
            }
            for &v in g {
                crate::check_positive(name, v)?;
            }
        }
        if self.folds < 2 {
            return Err(CoreError::InvalidParameter {
                name: "folds".into(),
                value: self.folds as f64,
                reason: "cross-validation needs at least 2 folds".into(),
            });
        }
        if !(1..=64).contains(&self.order) {
            return Err(CoreError::InvalidParameter {
                name: "order".into(),
                value: self.order as f64,
                reason: "must be in 1..=64".into(),
            });
        }
        Ok(())
    }
}

/// One scored candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Lengthscale factor `c`.
    pub lengthscale_factor: f64,
    /// The NIW hyperparameters.
    pub params: NiwParams,
    /// Mean held-out log-likelihood per point over the folds.
    pub cv_log_lik: f64,
}

/// The outcome of [`select_hyperparameters`].
#[derive(Debug, Clone)]
pub struct Selection {
    /// The chosen kernel (`ℓ_d = c · sd_d`).
    pub kernel: Kernel,
    /// The chosen NIW hyperparameters.
    pub params: NiwParams,
    /// Its mean held-out log-likelihood per point.
    pub cv_log_lik: f64,
    /// The normalisation domain used.
    pub domain: Domain,
    /// The per-dimension standard deviations `sd_d`.
    pub scales: Vec<f64>,
    /// Every candidate of the last search with its score (order: factor, β, σ₀², α).
    pub candidates: Vec<Candidate>,
    /// How the grids were widened because the optimum sat at an edge, and the edges the optimum
    /// still sits on after the last widening (empty: the optimum is inside every searched grid).
    pub grid_notes: Vec<String>,
    /// Candidates of the last search left out because the search quadrature does not resolve their
    /// density on the box (in some fold its normaliser fell below the rigorous lower bound of the
    /// `density::bound` module docs); their `cv_log_lik` is `−∞`.
    pub unresolved: usize,
}

/// How many times [`select_hyperparameters`] widens a grid whose edge holds the optimum.
pub const MAX_WIDENINGS: usize = 3;
/// Grid values are kept in `[GRID_FLOOR, GRID_CEILING]` when widened.
const GRID_FLOOR: f64 = 1e-6;
const GRID_CEILING: f64 = 1e8;

/// The four searched grids with their names.
fn grids_mut(opts: &mut SelectOptions) -> [(&'static str, &mut Vec<f64>); 4] {
    [
        ("lengthscale factor c", &mut opts.lengthscale_factors),
        ("σ₀²", &mut opts.sigma0_sq),
        ("β", &mut opts.beta),
        ("α − (d − 1)", &mut opts.alpha_offsets),
    ]
}

/// Extends `grid` by two values beyond the edge holding `chosen`, continuing its outermost ratio
/// (×10 for a grid with one distinct ratio of 1). Returns a note, or `None` when `chosen` is inside
/// the grid, the grid is a single fixed value, or the bound is reached.
fn widen(name: &str, grid: &mut Vec<f64>, chosen: f64) -> Option<String> {
    if grid.len() < 2 {
        return None;
    }
    grid.sort_by(f64::total_cmp);
    let (first, last) = (grid[0], grid[grid.len() - 1]);
    let ratio = |a: f64, b: f64| if b > a { b / a } else { 10.0 };
    let added: Vec<f64> = if chosen == first {
        let r = ratio(grid[0], grid[1]);
        [first / r, first / (r * r)].into_iter().filter(|v| *v >= GRID_FLOOR).collect()
    } else if chosen == last {
        let r = ratio(grid[grid.len() - 2], last);
        [last * r, last * r * r].into_iter().filter(|v| *v <= GRID_CEILING).collect()
    } else {
        return None;
    };
    if added.is_empty() {
        return None;
    }
    let note = format!(
        "{name}: optimum {chosen:.4e} at the {} edge of the grid; grid widened with {}",
        if chosen == first { "lower" } else { "upper" },
        added.iter().map(|v| format!("{v:.3e}")).collect::<Vec<_>>().join(", ")
    );
    grid.extend(added);
    grid.sort_by(f64::total_cmp);
    Some(note)
}

/// The chosen values of a selection, in the order of [`grids_mut`].
fn chosen_values(sel: &Selection, d: usize) -> [f64; 4] {
    let c = sel
        .candidates
        .iter()
        .find(|c| c.params == sel.params && c.cv_log_lik == sel.cv_log_lik)
        .map_or(f64::NAN, |c| c.lengthscale_factor);
    [c, sel.params.sigma0_sq, sel.params.beta, sel.params.alpha - (d as f64 - 1.0)]
}

/// Chooses `(c, σ₀², β, α)` for kernels of `family` by K-fold cross-validated log-likelihood of the
/// density normalised on the domain (1-D and 2-D data; see the module docs). Reports stage `select`,
/// one unit per lengthscale factor. Errors on fewer than 3 points, `d > 2`, or invalid options.
///
/// When the optimum sits at an edge of a grid with more than one value, that grid is extended by two
/// values beyond the edge (continuing its spacing) and the search is repeated, at most
/// [`MAX_WIDENINGS`] times; [`Selection::grid_notes`] says what was widened and which edges still hold
/// the optimum.
pub fn select_hyperparameters<B: Backend>(
    x: &Points,
    family: KernelFamily,
    opts: &SelectOptions,
    progress: &dyn Progress,
) -> Result<Selection, CoreError> {
    let mut opts = opts.clone();
    let mut notes = Vec::new();
    for round in 0..=MAX_WIDENINGS {
        let mut sel = select_on_grid::<B>(x, family, &opts, progress)?;
        let chosen = chosen_values(&sel, x.dim());
        let mut widened = false;
        for ((name, grid), value) in grids_mut(&mut opts).into_iter().zip(chosen) {
            let on_edge = grid.len() > 1 && (value == min_of(grid) || value == max_of(grid));
            let note = if round == MAX_WIDENINGS {
                on_edge.then(|| format!("{name}: optimum {value:.4e} still at the edge of the widened grid"))
            } else if let Some(note) = widen(name, grid, value) {
                widened = true;
                Some(note)
            } else {
                on_edge.then(|| {
                    format!(
                        "{name}: optimum {value:.4e} at the edge of the grid, which cannot be widened further"
                    )
                })
            };
            if let Some(note) = note.filter(|n| !notes.contains(n)) {
                notes.push(note);
            }
        }
        if !widened || round == MAX_WIDENINGS {
            if sel.unresolved > 0 {
                notes.push(unresolved_note(&sel, &opts, x.dim()));
            }
            sel.grid_notes = notes;
            return Ok(sel);
        }
    }
    unreachable!("the loop returns at its last round")
}

/// The note on the candidates a search left out as unresolved.
fn unresolved_note(sel: &Selection, opts: &SelectOptions, d: usize) -> String {
    let (panels, _) = search_panels(opts, d);
    format!(
        "{} of {} candidates left out: the search quadrature ({panels} panels of {} nodes per dimension) \
         does not resolve their density on this box (its normaliser fell below the rigorous lower bound \
         of its peak); a narrower box (smaller margin) lets the search consider sharper densities",
        sel.unresolved,
        sel.candidates.len(),
        opts.order
    )
}

/// Panels per dimension of the search rule of the box, and per segment of its tails.
fn search_panels(opts: &SelectOptions, d: usize) -> (usize, usize) {
    let box_panels = match (opts.search_panels, d) {
        (0, 1) => 48,
        (0, _) => 10,
        (p, _) => p,
    };
    // The tails are smooth (the floor, and the data's bumps decayed over the margin): a third of
    // the box's panels per segment in 1-D, a fifth in 2-D (8 cells there).
    (box_panels, (box_panels / if d == 1 { 3 } else { 5 }).max(1))
}

fn min_of(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max_of(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// One cross-validated search over the grids of `opts`.
fn select_on_grid<B: Backend>(
    x: &Points,
    family: KernelFamily,
    opts: &SelectOptions,
    progress: &dyn Progress,
) -> Result<Selection, CoreError> {
    opts.check()?;
    x.check_len("density training data", 3)?;
    let d = x.dim();
    let n = x.len();
    let domain = match &opts.domain {
        Some(dm) => dm.clone(),
        None => Domain::around(x, opts.margin)?,
    };
    if domain.dim() != d {
        return Err(CoreError::DimensionMismatch {
            what: "selection domain".into(),
            expected: d,
            found: domain.dim(),
        });
    }
    let (panels, tail_panels) = search_panels(opts, d);
    let core = core_of(x, &domain)?;
    let nodes = Grid::count(&domain, core.as_ref(), panels, panels, opts.order)
        .saturating_add(Grid::tail_count(&domain, core.as_ref(), tail_panels, tail_panels, opts.order));
    // Per fold: the Gram matrix and its eigenvectors (n²), and Q at every node for every combo.
    let per_node = (opts.beta.len().saturating_mul(opts.sigma0_sq.len())).saturating_add(d + 2);
    let bytes = Bytes::f64s(nodes).times(per_node).plus(Bytes::f64s(n).times(n).times(3));
    let setting = format!("{n} points with a search quadrature of {panels} panels × {} nodes", opts.order);
    crate::budget::check(&setting, bytes)?;
    let grid = Grid::new(&domain, core.as_ref(), panels, panels, opts.order)?;
    let tails =
        Grid::tails(&domain, core.as_ref(), tail_panels, tail_panels, opts.order, TailWeight::Cauchy)?;
    let scales: Vec<f64> = match &opts.scales {
        Some(s) => {
            if s.len() != 1 && s.len() != d {
                return Err(CoreError::DimensionMismatch {
                    what: "lengthscale base scales".into(),
                    expected: d,
                    found: s.len(),
                });
            }
            for &v in s {
                crate::check_positive("lengthscale", v)?;
            }
            (0..d).map(|k| if s.len() == 1 { s[0] } else { s[k] }).collect()
        }
        None => (0..d)
            .map(|k| {
                let mean = x.iter().map(|p| p[k]).sum::<f64>() / n as f64;
                let var = x.iter().map(|p| (p[k] - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
                let sd = var.sqrt();
                if sd > 0.0 { sd } else { (domain.upper[k] - domain.lower[k]) / 4.0 }
            })
            .collect(),
    };
    // Folds.
    let folds = opts.folds;
    if folds > n {
        return Err(CoreError::InvalidParameter {
            name: "folds".into(),
            value: folds as f64,
            reason: format!("at most the number of points ({n}; {n} folds is leave-one-out)"),
        });
    }
    let mut perm: Vec<usize> = (0..n).collect();
    perm.shuffle(&mut ChaCha8Rng::seed_from_u64(opts.seed));
    let fold_of: Vec<Vec<usize>> =
        (0..folds).map(|f| perm.iter().copied().skip(f).step_by(folds).collect()).collect();

    let combos: Vec<(f64, f64)> =
        opts.beta.iter().flat_map(|&b| opts.sigma0_sq.iter().map(move |&s| (b, s))).collect();
    let na = opts.alpha_offsets.len();
    let mut candidates = Vec::new();
    let mut unresolved = 0;
    for (step, &c) in opts.lengthscale_factors.iter().enumerate() {
        progress.checkpoint()?;
        progress.update("select", step as u64, opts.lengthscale_factors.len() as u64);
        let ls: Vec<f64> = scales.iter().map(|s| c * s).collect();
        let kernel = Kernel::new(family, ls)?;
        let rules =
            Rules { grid: &grid, tails: &tails, bound: LowerBound::new(&kernel, &domain), domain: &domain };
        // Sum over folds of held-out log-likelihood, per (combo, alpha).
        let mut score = vec![0.0; combos.len() * na];
        for val in &fold_of {
            let mut is_val = vec![false; n];
            val.iter().for_each(|&i| is_val[i] = true);
            let train_idx: Vec<usize> = (0..n).filter(|&i| !is_val[i]).collect();
            let xt = x.select(&train_idx);
            let xv = x.select(val);
            let fold_scores = fold_scores::<B>(&kernel, &xt, &xv, &rules, &combos, &opts.alpha_offsets, d)?;
            for (s, f) in score.iter_mut().zip(fold_scores) {
                *s += f;
            }
        }
        unresolved += score.iter().filter(|s| **s == f64::NEG_INFINITY).count();
        for (ci, &(beta, sigma0_sq)) in combos.iter().enumerate() {
            for (ai, &a) in opts.alpha_offsets.iter().enumerate() {
                candidates.push(Candidate {
                    lengthscale_factor: c,
                    params: NiwParams { alpha: d as f64 - 1.0 + a, beta, sigma0_sq },
                    cv_log_lik: score[ci * na + ai] / n as f64,
                });
            }
        }
    }
    let best = candidates
        .iter()
        .filter(|c| c.cv_log_lik.is_finite())
        .max_by(|a, b| a.cv_log_lik.total_cmp(&b.cv_log_lik))
        .copied()
        .ok_or_else(|| CoreError::InvalidParameter {
            name: "hyperparameter grid".into(),
            value: f64::NAN,
            reason: if unresolved > 0 {
                format!(
                    "no candidate gave a finite held-out log-likelihood ({unresolved} were left out because \
                     the search quadrature does not resolve their density on this box); use a narrower box \
                     (smaller margin) or wider grids"
                )
            } else {
                "no candidate gave a finite held-out log-likelihood; widen the grids or the domain".into()
            },
        })?;
    progress.update("select", opts.lengthscale_factors.len() as u64, opts.lengthscale_factors.len() as u64);
    let kernel = Kernel::new(family, scales.iter().map(|s| best.lengthscale_factor * s).collect())?;
    Ok(Selection {
        kernel,
        params: best.params,
        cv_log_lik: best.cv_log_lik,
        domain,
        scales,
        candidates,
        grid_notes: Vec::new(),
        unresolved,
    })
}

/// The search rules of the box and its tails, the lower bound that checks the box rule, the box.
struct Rules<'a> {
    grid: &'a Grid,
    tails: &'a Grid,
    bound: LowerBound,
    domain: &'a Domain,
}

/// Held-out log-likelihood sums of one fold for every `(combo, α)` of the density normalised on
/// the whole space (box and Cauchy tails); `−∞` where the box rule's estimate of the normaliser is
/// below the rigorous lower bound from the densest evaluated point of the box (the rule missed a
/// peak: the score would be inflated by the missing mass).
fn fold_scores<B: Backend>(
    kernel: &Kernel,
    xt: &Points,
    xv: &Points,
    rules: &Rules,
    combos: &[(f64, f64)],
    alpha_offsets: &[f64],
    d: usize,
) -> Result<Vec<f64>, CoreError> {
    let n = xt.len();
    let kmat = kernel.gram(xt)?;
    let eig = B::sym_eigen(kmat.as_ref())?;
    let lam: Vec<f64> = eig.values.iter().map(|&l| l.max(0.0)).collect();
    let u = &eig.vectors;
    let ut1: Vec<f64> = (0..n).map(|j| u.col(j).iter().sum()).collect();
    let total: f64 = lam.iter().zip(&ut1).map(|(l, v)| l * v * v).sum();
    let (grid, domain) = (rules.grid, rules.domain);
    // Evaluation points: box nodes, tail nodes, validation points, training points.
    let eval = grid.nodes.concat(&rules.tails.nodes)?.concat(xv)?.concat(xt)?;
    let ne = eval.len();
    let g = grid.nodes.len();
    let gt = g + rules.tails.nodes.len();
    let nv = xv.len();
    // Which evaluated points lie in the box (they may carry the lower bound).
    let in_box: Vec<bool> = (0..ne).map(|i| i < g || (i >= gt && domain.contains(eval.point(i)))).collect();
    let log_w: Vec<f64> = xv.iter().map(|p| TailWeight::Cauchy.log_weight(domain, p)).collect();
    // Q for every combo and evaluation point: q_all[combo * ne + e].
    let mut q_all = vec![0.0; combos.len() * ne];
    const CHUNK: usize = 1024;
    let chunks: Vec<(usize, Vec<f64>)> = (0..ne.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| -> Result<(usize, Vec<f64>), CoreError> {
            let idx: Vec<usize> = (c * CHUNK..((c + 1) * CHUNK).min(ne)).collect();
            let pts = eval.select(&idx);
            let m = idx.len();
            let ke = kernel.cross_gram(xt, &pts)?; // n × m
            let mut p = Mat::zeros(n, m);
            B::gemm(1.0, u.as_ref(), Trans::Yes, ke.as_ref(), Trans::No, 0.0, p.as_mut())?;
            let sums: Vec<f64> = (0..m).map(|j| ke.col(j).iter().sum()).collect();
            let kxx: Vec<f64> = (0..m).map(|j| kernel.eval(pts.point(j), pts.point(j))).collect();
            let mut out = vec![0.0; combos.len() * m];
            let mut dvec = vec![0.0; n];
            for (ci, &(beta, s2)) in combos.iter().enumerate() {
                let nb = n as f64 + beta;
                let rho = s2 / beta;
                for i in 0..n {
                    dvec[i] = 1.0 / (lam[i] + s2);
                }
                let uau: f64 = (0..n).map(|i| ut1[i] * ut1[i] * dvec[i]).sum();
                for j in 0..m {
                    let pc = p.col(j);
                    let (mut ww, mut wu) = (0.0, 0.0);
                    for i in 0..n {
                        let v = pc[i] - lam[i] * ut1[i] / nb;
                        let t = v * dvec[i];
                        ww += v * t;
                        wu += t * ut1[i];
                    }
                    let quad = ww - rho * wu * wu / (1.0 + rho * uau);
                    let ptp = kxx[j] - 2.0 * sums[j] / nb + total / (nb * nb);
                    out[ci * m + j] = ((ptp - quad) / s2).max(0.0);
                }
            }
            Ok((c * CHUNK, out))
        })
        .collect::<Result<_, _>>()?;
    for (start, out) in chunks {
        let m = out.len() / combos.len();
        for ci in 0..combos.len() {
            q_all[ci * ne + start..ci * ne + start + m].copy_from_slice(&out[ci * m..(ci + 1) * m]);
        }
    }
    let mut scores = vec![0.0; combos.len() * alpha_offsets.len()];
    for (ci, &(beta, s2)) in combos.iter().enumerate() {
        let qs = &q_all[ci * ne..(ci + 1) * ne];
        let q_min =
            qs.iter().zip(&in_box).filter(|(_, b)| **b).map(|(q, _)| *q).fold(f64::INFINITY, f64::min);
        for (ai, &a) in alpha_offsets.iter().enumerate() {
            let params = NiwParams { alpha: d as f64 - 1.0 + a, beta, sigma0_sq: s2 };
            let (gam, e) = (params.gamma(n), params.exponent(n));
            let terms: Vec<f64> = qs[..gt]
                .iter()
                .zip(grid.log_weights.iter().chain(&rules.tails.log_weights))
                .map(|(q, w)| w - e * (gam + q).ln())
                .collect();
            let lz_box = log_sum_exp(&terms[..g]);
            let held = if rules.bound.admits(lz_box, q_min, gam, e, s2) {
                let lz = log_sum_exp(&terms);
                qs[gt..gt + nv].iter().zip(&log_w).map(|(q, lw)| -e * (gam + q).ln() + lw - lz).sum()
            } else {
                f64::NEG_INFINITY
            };
            scores[ci * alpha_offsets.len() + ai] = held;
        }
    }
    Ok(scores)
}
