//! `with_backend!`: each compiled-in backend runs the expression (through `Selected`); a backend this
//! build lacks gives the "not compiled in" error without running it.

use bke_linalg::{Backend, BackendKind, LinalgError, with_backend};

fn name<B: Backend>() -> &'static str {
    B::name()
}

#[test]
fn each_compiled_in_backend_gets_its_type() {
    for kind in BackendKind::available() {
        assert_eq!(with_backend!(kind, B => name::<B>()).unwrap(), kind.name());
    }
}

#[test]
fn a_question_mark_in_the_expression_returns_from_the_caller() {
    fn fails(kind: BackendKind) -> Result<usize, String> {
        let n: usize = with_backend!(kind, B => { Err::<(), _>(B::name().to_string())?; 0 })
            .map_err(|e| e.to_string())?;
        Ok(n)
    }
    assert_eq!(fails(BackendKind::default_kind()), Err(BackendKind::default_kind().name().to_string()));
}

#[test]
fn a_missing_backend_is_an_error() {
    for kind in BackendKind::ALL.into_iter().filter(|k| !k.is_available()) {
        let ran = std::cell::Cell::new(false);
        let err = with_backend!(kind, B => { ran.set(true); name::<B>() }).unwrap_err();
        assert!(!ran.get());
        assert!(matches!(err, LinalgError::Backend { backend, .. } if backend == kind.name()));
        assert!(err.to_string().contains("not compiled in"), "{err}");
        assert_eq!(err.to_string(), kind.not_compiled_in().to_string());
    }
}

#[cfg(not(feature = "openblas"))]
#[test]
fn openblas_is_missing_from_the_default_build() {
    let err = with_backend!(BackendKind::OpenBlas, B => name::<B>()).unwrap_err();
    assert!(err.to_string().contains("not compiled in (enable the 'openblas' feature)"), "{err}");
}
