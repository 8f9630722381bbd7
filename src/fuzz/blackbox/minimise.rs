//! Delta debugging (ddmin) over a case's op list: the smallest sublist,
//! in order, that still shows the same oracle, within a test budget.

use std::future::Future;

/// Shrinks `items` while `still_fails` holds, trying at most `budget`
/// candidates. `items` itself is assumed to fail. The result is 1-minimal
/// (no single item can be dropped) when the budget lasts.
pub async fn ddmin<T, F, Fut>(items: Vec<T>, mut still_fails: F, budget: usize) -> Vec<T>
where
    T: Clone,
    F: FnMut(Vec<T>) -> Fut,
    Fut: Future<Output = bool>,
{
    let mut cur = items;
    let mut tries = 0;
    let mut n = 2usize;
    while !cur.is_empty() && tries < budget {
        let len = cur.len();
        let chunk = len.div_ceil(n.min(len));
        let parts: Vec<Vec<T>> = cur.chunks(chunk).map(<[T]>::to_vec).collect();
        let mut reduced = None;
        // Each complement (the list without one part).
        for i in 0..parts.len() {
            if tries >= budget {
                break;
            }
            let rest: Vec<T> = parts
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .flat_map(|(_, p)| p.iter().cloned())
                .collect();
            tries += 1;
            if still_fails(rest.clone()).await {
                reduced = Some(rest);
                break;
            }
        }
        match reduced {
            Some(r) => {
                cur = r;
                n = n.saturating_sub(1).max(2);
            }
            None if chunk == 1 => break,
            None => n = (n * 2).min(len),
        }
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T: Clone>(items: Vec<T>, f: impl Fn(&[T]) -> bool, budget: usize) -> Vec<T> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(ddmin(items, |c| std::future::ready(f(&c)), budget))
    }

    #[test]
    fn finds_the_failing_pair_in_order() {
        let items: Vec<u32> = (0..10).collect();
        let min = run(items, |c| c.contains(&3) && c.contains(&7), 100);
        assert_eq!(min, vec![3, 7]);
    }

    #[test]
    fn drops_everything_when_nothing_is_needed_and_respects_the_budget() {
        assert!(run(vec![1, 2, 3], |_| true, 100).is_empty());
        let mut calls = 0;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let out = rt.block_on(ddmin(
            (0..64).collect::<Vec<u32>>(),
            |c| {
                calls += 1;
                std::future::ready(c.contains(&5))
            },
            4,
        ));
        assert_eq!(calls, 4);
        assert!(out.contains(&5));
    }
}
