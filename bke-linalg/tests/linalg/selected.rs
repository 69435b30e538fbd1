//! [`Selected`]: under each compiled-in kind it gives the static backend's results bit for bit (it
//! forwards every function a backend overrides), and selections of different kinds exclude each
//! other: one waits for the other, and one nested inside the other on a thread is an error.

use bke_linalg::{Backend, BackendKind, Mat, Selected, Trans, with_backend};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// Every kernel of the trait on fixed operands, results flattened.
fn battery<B: Backend>() -> Vec<Vec<f64>> {
    let n = 37;
    let a = Mat::from_fn(n, n + 5, |i, j| {
        ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.4 + if i == j { 1.0 } else { 0.0 }
    });
    let w = Mat::from_fn(n, 3, |i, j| ((i + 2 * j) % 5) as f64 / 5.0 - 0.3);
    let flat = |m: &Mat| (0..m.ncols()).flat_map(|j| m.col(j).to_vec()).collect::<Vec<f64>>();
    let mut gram = B::gram(a.as_ref());
    let mut sym = Mat::zeros(n, n);
    B::gemm_symmetric(0.5, a.as_ref(), Trans::No, a.as_ref(), Trans::Yes, 0.0, sym.as_mut()).unwrap();
    let mut prod = Mat::zeros(n + 5, n);
    B::gemm(1.5, a.as_ref(), Trans::Yes, sym.as_ref(), Trans::No, 0.0, prod.as_mut()).unwrap();
    let mut y = vec![1.0; n];
    B::gemv(2.0, a.as_ref(), Trans::No, &vec![0.5; n + 5], 1.0, &mut y).unwrap();
    let (a32, b32): (Vec<f32>, Vec<f32>) =
        ((0..n * 6).map(|i| (i % 13) as f32 / 13.0).collect(), (0..6 * 4).map(|i| (i % 5) as f32).collect());
    let mut c32 = vec![0f32; n * 4];
    B::gemm_f32(&a32, &b32, &mut c32, (n, 6, 4)).unwrap();
    for i in 0..gram.nrows() {
        gram[(i, i)] += 1.0;
    }
    let mut l = B::cholesky(sym.as_ref())
        .unwrap_or_else(|_| B::cholesky_jittered(sym.as_ref(), Default::default()).unwrap().0);
    let mut x = prod.transpose();
    B::cholesky_solve_in_place(l.as_ref(), x.as_mut()).unwrap();
    let eig = B::sym_eigen(gram.as_ref()).unwrap();
    B::cholesky_update(l.as_mut(), w.as_ref()).unwrap();
    let updated = l.clone();
    B::cholesky_downdate(l.as_mut(), w.as_ref()).unwrap();
    vec![
        flat(&gram),
        flat(&sym),
        flat(&prod),
        y,
        c32.iter().map(|&v| f64::from(v)).collect(),
        flat(&x),
        eig.values,
        flat(&eig.vectors),
        flat(&updated),
        flat(&l),
    ]
}

fn static_battery(kind: BackendKind) -> Vec<Vec<f64>> {
    match kind {
        BackendKind::Faer => battery::<bke_linalg::Faer>(),
        #[cfg(feature = "nalgebra")]
        BackendKind::Nalgebra => battery::<bke_linalg::Nalgebra>(),
        #[cfg(feature = "openblas")]
        BackendKind::OpenBlas => battery::<bke_linalg::OpenBlas>(),
        #[allow(unreachable_patterns)]
        _ => unreachable!("only compiled-in kinds are listed"),
    }
}

#[test]
fn selected_equals_the_static_backend_bit_for_bit() {
    for kind in BackendKind::available() {
        let dynamic = with_backend!(kind, B => battery::<B>()).unwrap();
        let fixed = static_battery(kind);
        for (i, (d, s)) in dynamic.iter().zip(&fixed).enumerate() {
            assert!(d.iter().zip(s).all(|(a, b)| a.to_bits() == b.to_bits()), "{kind}: result {i} differs");
        }
    }
}

#[test]
fn another_kind_inside_a_selection_is_an_error_and_the_same_kind_nests() {
    let kinds = BackendKind::available();
    let outer = Selected::enter(kinds[0]).unwrap();
    let inner = Selected::enter(kinds[0]).unwrap();
    assert_eq!(inner.kind(), kinds[0]);
    drop(inner);
    if let Some(&other) = kinds.get(1) {
        let err = Selected::enter(other).unwrap_err();
        assert!(
            err.to_string().contains(&format!("inside a computation that runs on {}", kinds[0])),
            "{err}"
        );
    }
    assert_eq!(Selected::name(), kinds[0].name());
    drop(outer);
}

#[test]
fn a_selection_of_another_kind_waits_for_the_first_to_end() {
    let kinds = BackendKind::available();
    let [first, second, ..] = kinds[..] else { return };
    let started = Arc::new(Barrier::new(2));
    let holder = {
        let started = Arc::clone(&started);
        std::thread::spawn(move || {
            let selection = Selected::enter(first).unwrap();
            started.wait();
            std::thread::sleep(Duration::from_millis(200));
            // the other thread is waiting: the selection is still `first`
            let name = Selected::name();
            drop(selection);
            name
        })
    };
    started.wait();
    let waited = std::time::Instant::now();
    let name = with_backend!(second, B => B::name()).unwrap();
    assert!(waited.elapsed() >= Duration::from_millis(150), "did not wait: {:?}", waited.elapsed());
    assert_eq!(name, second.name());
    assert_eq!(holder.join().unwrap(), first.name());
}
