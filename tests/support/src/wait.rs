//! Waiting in a test: poll until something holds, or fail naming what did not happen; and a
//! prerequisite that is missing here.

use std::time::{Duration, Instant};

/// Waits until `ok` holds, checking every 100 ms; fails the test after `limit`, naming `what`.
/// Prints how long it waited: a test's phases and where its time goes, in its captured output.
pub async fn until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let started = Instant::now();
    let deadline = started + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("waited {:.1} s for {what}", started.elapsed().as_secs_f64());
}

/// A test whose prerequisite is missing here (root, `mount`, network namespaces) says so and
/// checks nothing — except under `CI=true`, where the prerequisite is part of the machine and
/// its absence fails the test: CI cannot tell a skip from a pass.
pub fn skip(why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("a prerequisite is missing under CI=true: {why}");
    }
    eprintln!("SKIPPED: {why}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn until_returns_once_its_condition_holds() {
        let mut n = 0;
        until("the third look", Duration::from_secs(5), || {
            n += 1;
            n >= 3
        })
        .await;
        assert_eq!(n, 3);
    }

    #[tokio::test]
    #[should_panic(expected = "timed out waiting for nothing")]
    async fn until_fails_the_test_after_its_limit() {
        until("nothing", Duration::from_millis(250), || false).await;
    }
}
