//! The first write a fjall database refused, kept to say why its later writes fail.
//!
//! When a write to fjall's journal fails (a full disk, an I/O error), the database is poisoned:
//! every later write and sync returns `Poisoned`, which names no cause. The first failure may
//! have gone to a caller that could carry on without it (a layout's sighting, a URL's
//! outcome), so the fault the node finally reports would read "Poisoned" instead of "No space
//! left on device". Every writer of a store notes its errors here, and the store's sync
//! explains a `Poisoned` with the first one.

use std::sync::{Arc, OnceLock};

/// Shared by a store and its tables. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct FirstFailure(Arc<OnceLock<String>>);

impl FirstFailure {
    /// Passes `result` through, keeping its error if it is the first that is not `Poisoned`.
    pub fn note<T>(&self, result: fjall::Result<T>) -> fjall::Result<T> {
        if let Err(e) = &result {
            self.note_error(e);
        }
        result
    }

    /// Keeps `e` if it is the first failure that is not `Poisoned`.
    pub fn note_error(&self, e: &fjall::Error) {
        if !matches!(e, fjall::Error::Poisoned) {
            let _ = self.0.set(e.to_string());
        }
    }

    /// The first failure noted, if any.
    pub fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }

    /// `e` in words, with the first failure when `e` is the `Poisoned` that followed it.
    pub fn explain(&self, e: &fjall::Error) -> String {
        match (e, self.get()) {
            (fjall::Error::Poisoned, Some(first)) => {
                format!("it takes no more writes since one failed: {first}")
            }
            _ => e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_real_failure_explains_a_later_poisoned() {
        let f = FirstFailure::default();
        assert_eq!(f.note(Ok::<u8, fjall::Error>(1)).unwrap(), 1);
        assert!(f.note::<()>(Err(fjall::Error::Poisoned)).is_err());
        assert_eq!(f.get(), None, "Poisoned is not a cause");
        let full = std::io::Error::from_raw_os_error(28);
        let _ = f.note::<()>(Err(fjall::Error::Io(full)));
        let _ = f.note::<()>(Err(fjall::Error::Io(std::io::Error::other("later"))));
        let said = f.explain(&fjall::Error::Poisoned);
        assert!(said.contains("No space left on device"), "{said}");
        assert!(!f.explain(&fjall::Error::InvalidTrailer).contains("No space"));
    }
}
