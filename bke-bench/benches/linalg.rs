//! divan benches over the shared linalg workloads: `cargo bench -p bke-bench --bench linalg`.

use bke_bench::linalg::{Inputs, Op, Scratch, run};
use bke_linalg::{Backend, Faer, Nalgebra};

fn main() {
    divan::main();
}

const SIZES: [usize; 3] = [128, 512, 1024];

fn bench<B: Backend>(bencher: divan::Bencher, op: Op, n: usize) {
    let inputs = Inputs::new(n, 42);
    let mut s = Scratch::new(n);
    bencher.bench_local(|| {
        s.prepare(op, &inputs);
        run::<B>(op, &inputs, &mut s)
    });
}

#[divan::bench(types = [Faer, Nalgebra], args = SIZES)]
fn cholesky<B: Backend>(bencher: divan::Bencher, n: usize) {
    bench::<B>(bencher, Op::Cholesky, n);
}

#[divan::bench(types = [Faer, Nalgebra], args = SIZES)]
fn eigen<B: Backend>(bencher: divan::Bencher, n: usize) {
    bench::<B>(bencher, Op::Eigen, n);
}

#[divan::bench(types = [Faer, Nalgebra], args = SIZES)]
fn rank1_update<B: Backend>(bencher: divan::Bencher, n: usize) {
    bench::<B>(bencher, Op::Rank1Update, n);
}

#[divan::bench(types = [Faer, Nalgebra], args = SIZES)]
fn gemm<B: Backend>(bencher: divan::Bencher, n: usize) {
    bench::<B>(bencher, Op::Gemm, n);
}
