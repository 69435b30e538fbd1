//! Linear-algebra workloads: Cholesky, symmetric eigendecomposition, rank-1 Cholesky update and GEMM.

use bke_linalg::{Backend, Mat, Trans};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

/// One timed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Cholesky factorisation of an SPD `n × n` matrix.
    Cholesky,
    /// Symmetric eigendecomposition (values and vectors).
    Eigen,
    /// Rank-1 update of an `n × n` Cholesky factor.
    Rank1Update,
    /// `C ← A B`, all `n × n`.
    Gemm,
}

impl Op {
    /// Every operation, in report order.
    pub const ALL: [Op; 4] = [Op::Cholesky, Op::Eigen, Op::Rank1Update, Op::Gemm];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Op::Cholesky => "cholesky",
            Op::Eigen => "eigen",
            Op::Rank1Update => "rank1_update",
            Op::Gemm => "gemm",
        }
    }

    /// Nominal flop count: n³/3 (Cholesky), 9n³ (symmetric QR with vectors, Golub & Van Loan),
    /// 3n² (rank-1 update: 6 flops on each of n²/2 entries), 2n³ (GEMM).
    pub fn flops(self, n: usize) -> f64 {
        let n = n as f64;
        match self {
            Op::Cholesky => n * n * n / 3.0,
            Op::Eigen => 9.0 * n * n * n,
            Op::Rank1Update => 3.0 * n * n,
            Op::Gemm => 2.0 * n * n * n,
        }
    }
}

/// A random `n × m` matrix with standard normal entries.
pub fn gaussian(n: usize, m: usize, seed: u64) -> Mat {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    Mat::from_fn(n, m, |_, _| StandardNormal.sample(&mut rng))
}

/// A well-conditioned SPD matrix `GᵀG/n + I`.
pub fn spd(n: usize, seed: u64) -> Mat {
    let g = gaussian(n, n, seed);
    let mut a = Mat::zeros(n, n);
    bke_linalg::DefaultBackend::gemm(
        1.0 / n as f64,
        g.as_ref(),
        Trans::Yes,
        g.as_ref(),
        Trans::No,
        0.0,
        a.as_mut(),
    )
    .expect("square shapes");
    for i in 0..n {
        a[(i, i)] += 1.0;
    }
    a
}

/// Inputs of every operation at one size, built once and reused across backends and repetitions.
pub struct Inputs {
    /// SPD matrix.
    pub a: Mat,
    /// Its lower Cholesky factor.
    pub l: Mat,
    /// Update vector.
    pub w: Vec<f64>,
    /// Second GEMM operand.
    pub b: Mat,
}

impl Inputs {
    /// Inputs of size `n`.
    pub fn new(n: usize, seed: u64) -> Self {
        let a = spd(n, seed);
        let l = bke_linalg::DefaultBackend::cholesky(a.as_ref()).expect("spd by construction");
        let w = gaussian(n, 1, seed + 1).into_vec().iter().map(|v| v * 0.1).collect();
        let b = gaussian(n, n, seed + 2);
        Self { a, l, w, b }
    }
}

/// Scratch buffers an operation writes into, so the timed region allocates only what the backend does.
pub struct Scratch {
    /// Output / factor buffer.
    pub out: Mat,
    /// Vector buffer.
    pub v: Vec<f64>,
}

impl Scratch {
    /// Buffers for size `n`.
    pub fn new(n: usize) -> Self {
        Self { out: Mat::zeros(n, n), v: vec![0.0; n] }
    }

    /// Copies the operation's input into the buffers (untimed).
    pub fn prepare(&mut self, op: Op, inputs: &Inputs) {
        match op {
            Op::Cholesky => self.out.as_mut_slice().copy_from_slice(inputs.a.as_slice()),
            Op::Rank1Update => {
                self.out.as_mut_slice().copy_from_slice(inputs.l.as_slice());
                self.v.copy_from_slice(&inputs.w);
            }
            Op::Eigen | Op::Gemm => {}
        }
    }
}

/// Runs `op` once with backend `B` (after [`Scratch::prepare`]); returns a checksum so the work
/// cannot be optimised away.
pub fn run<B: Backend>(op: Op, inputs: &Inputs, s: &mut Scratch) -> f64 {
    match op {
        Op::Cholesky => {
            B::cholesky_in_place(s.out.as_mut()).expect("spd");
            s.out[(0, 0)]
        }
        Op::Eigen => B::sym_eigen(inputs.a.as_ref()).expect("symmetric").values[0],
        Op::Rank1Update => {
            B::cholesky_update(s.out.as_mut(), bke_linalg::MatRef::col_vector(&s.v)).expect("update");
            s.out[(0, 0)]
        }
        Op::Gemm => {
            B::gemm(1.0, inputs.a.as_ref(), Trans::No, inputs.b.as_ref(), Trans::No, 0.0, s.out.as_mut())
                .expect("square");
            s.out[(0, 0)]
        }
    }
}
