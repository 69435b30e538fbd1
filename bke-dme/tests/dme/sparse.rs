//! Inducing points (§8.2): the sparse marginal likelihood is the TTGP one with x = y = u, its
//! gradients (hyperparameters and inducing points) match central differences, learning helps.

use crate::common::*;
use bke_core::{Dataset, Kernel, Params, Points, Predict};
use bke_dme::TaskData;
use bke_dme::learn::{Learn, MultiStartOptions};
use bke_dme::sparse::{SparseTtgpParams, initial_inducing, sparse_log_marginal};
use bke_dme::ttgp::{MarginalForm, TtgpParams, log_marginal_value};
use bke_linalg::DefaultBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn toy(seed: u64, m: usize, d: usize) -> (Points, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let y = uniform(&mut rng, m * d, -3.0, 3.0);
    let noise = uniform(&mut rng, m, -0.1, 0.1);
    let z = (0..m).map(|j| (y[j * d] * 1.2).sin() + 0.3 * y[j * d + d - 1] + noise[j]).collect();
    (Points::new("ỹ", y, d).unwrap(), z)
}

fn hyp(d: usize) -> TtgpParams {
    TtgpParams {
        kernel_x: Kernel::se_ard(vec![0.9; d]).unwrap(),
        kernel_y: Kernel::se_ard((0..d).map(|i| 0.7 + 0.1 * i as f64).collect()).unwrap(),
        sigma: 0.2,
        lambda: 0.01,
        epsilon: 0.003,
        ..Default::default()
    }
}

#[test]
fn sparse_marginal_is_the_dense_ttgp_marginal_with_x_equal_y_equal_u() {
    let (yt, z) = toy(1, 40, 2);
    let u = initial_inducing(&yt, 6, 3).unwrap();
    let h = hyp(2);
    let r = sparse_log_marginal::<DefaultBackend>(&u, &yt, &z, &h).unwrap();
    let data = TaskData::new(u.clone(), u.clone(), yt.clone(), z.clone()).unwrap();
    let want = naive_log_density(&naive_covariance(&data, &h, false), &z);
    assert!((r.value - want).abs() < 1e-9 * want.abs(), "{} vs {want}", r.value);
    assert!(
        (log_marginal_value::<DefaultBackend>(&data, &with_form(&h, MarginalForm::Map)).unwrap() - want)
            .abs()
            < 1e-9 * want.abs()
    );
}

#[test]
fn sparse_gradients_match_central_finite_differences() {
    let (yt, z) = toy(2, 30, 2);
    let u = initial_inducing(&yt, 5, 4).unwrap();
    let h = hyp(2);
    let r = sparse_log_marginal::<DefaultBackend>(&u, &yt, &z, &h).unwrap();
    let f = |h: &TtgpParams, u: &Points| sparse_log_marginal::<DefaultBackend>(u, &yt, &z, h).unwrap().value;
    let step = 1e-5;
    let p = h.log_params();
    for i in 0..p.len() {
        let (mut a, mut b) = (p.clone(), p.clone());
        a[i] += step;
        b[i] -= step;
        let fd =
            (f(&h.with_log_params(&a).unwrap(), &u) - f(&h.with_log_params(&b).unwrap(), &u)) / (2.0 * step);
        let err = (r.gradient[i] - fd).abs() / fd.abs().max(1.0);
        assert!(err < 1e-6, "hyper {i}: {} vs {fd}", r.gradient[i]);
    }
    for i in 0..u.as_slice().len() {
        let (mut a, mut b) = (u.as_slice().to_vec(), u.as_slice().to_vec());
        a[i] += step;
        b[i] -= step;
        let fd = (f(&h, &Points::new("u", a, 2).unwrap()) - f(&h, &Points::new("u", b, 2).unwrap()))
            / (2.0 * step);
        let err = (r.gradient_inducing[i] - fd).abs() / fd.abs().max(1.0);
        assert!(err < 1e-6, "inducing coordinate {i}: {} vs {fd}", r.gradient_inducing[i]);
    }
}

#[test]
fn learning_inducing_points_improves_the_fit() {
    let (yt, z) = toy(3, 60, 1);
    let data = Dataset::new(yt.clone(), z.clone()).unwrap();
    let ttgp = TtgpParams {
        learn: Learn::all(),
        search: MultiStartOptions { starts: 2, seed: 1, ..Default::default() },
        ..TtgpParams::tied(Kernel::se(1.0).unwrap(), Kernel::se(1.0).unwrap(), 0.3, 5, 60)
    };
    let u0 = initial_inducing(&yt, 5, 0).unwrap();
    let sparse = SparseTtgpParams { ttgp, inducing: 5, initial: Some(u0.clone()), ..Default::default() };
    let fixed_u = SparseTtgpParams { learn_inducing: false, ..sparse.clone() };
    let fixed = fixed_u.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    let learned = sparse.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    assert_eq!(learned.params().kernel_x, learned.params().kernel_y);
    assert_eq!(learned.params().form, MarginalForm::Alternative);
    assert_eq!(fixed.data().x, u0);
    assert_eq!(learned.data().x, learned.data().y);
    let (lf, ll) =
        (fixed.log_marginal::<DefaultBackend>().unwrap(), learned.log_marginal::<DefaultBackend>().unwrap());
    assert!(ll > lf, "{ll} vs {lf}");
    let pred = learned.predict::<DefaultBackend>(&yt).unwrap();
    let rmse = (pred.mean.iter().zip(&z).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / 60.0).sqrt();
    assert!(rmse < 0.2, "rmse {rmse}");
    let wrong = SparseTtgpParams { inducing: 4, ..sparse.clone() };
    assert!(wrong.check().unwrap_err().to_string().contains("initial inducing points"));
    assert!(initial_inducing(&yt, 0, 0).is_err() && initial_inducing(&yt, 61, 0).is_err());
}
