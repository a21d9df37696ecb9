//! Cursor pagination as OpenAI's list endpoints do it: `limit`, `order` (by creation time) and
//! `after` (the id of the last object of the previous page), answered with the page and whether
//! more follow. The databases page in their queries (`LIMIT`, a keyset condition on the cursor's
//! position); [`page_of`] pages a list already in memory (a record's items) by the same rules.

use crate::StoreError;

/// The most objects one page may hold (OpenAI's cap for `GET /v1/files`).
pub const MAX_PAGE: usize = 10_000;

/// The order of a page: by creation time, oldest or newest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    Asc,
    /// Newest first: OpenAI's default.
    #[default]
    Desc,
}

/// Which page to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// At most this many objects (clamped to 1..=[`MAX_PAGE`]).
    pub limit: usize,
    pub order: Order,
    /// The objects after this one, in `order`; `None`: from the first.
    pub after: Option<String>,
    /// Files only: of this purpose.
    pub purpose: Option<String>,
}

impl PageRequest {
    /// The first page of `limit` objects, newest first.
    pub fn first(limit: usize) -> Self {
        PageRequest {
            limit,
            order: Order::Desc,
            after: None,
            purpose: None,
        }
    }

    /// `limit` clamped to what a page may hold.
    pub fn clamped_limit(&self) -> usize {
        self.limit.clamp(1, MAX_PAGE)
    }
}

/// One page of a list.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    pub data: Vec<T>,
    /// Whether objects follow the last one of `data`.
    pub has_more: bool,
}

impl<T> Page<T> {
    /// A page from up to `limit + 1` rows read in order: the extra row only says more follow.
    pub(crate) fn from_rows(mut rows: Vec<T>, limit: usize) -> Self {
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        Page {
            data: rows,
            has_more,
        }
    }
}

/// One page of `items`, which are oldest first; `id` names an item for the cursor. An `after`
/// that names no item is [`StoreError::UnknownCursor`].
pub fn page_of<T>(
    mut items: Vec<T>,
    id: impl Fn(&T) -> Option<&str>,
    request: &PageRequest,
) -> Result<Page<T>, StoreError> {
    if request.order == Order::Desc {
        items.reverse();
    }
    if let Some(after) = &request.after {
        let Some(position) = items.iter().position(|i| id(i) == Some(after.as_str())) else {
            return Err(StoreError::UnknownCursor(after.clone()));
        };
        items.drain(..=position);
    }
    Ok(Page::from_rows(items, request.clamped_limit()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn request(limit: usize, order: Order, after: Option<&str>) -> PageRequest {
        PageRequest {
            limit,
            order,
            after: after.map(str::to_owned),
            purpose: None,
        }
    }

    #[test]
    fn pages_walk_in_both_orders_and_refuse_unknown_cursors() {
        let items = || vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        #[allow(clippy::ptr_arg)] // the items are Strings
        fn id(s: &String) -> Option<&str> {
            Some(s)
        }
        let page = page_of(items(), id, &request(2, Order::Desc, None)).unwrap();
        assert_eq!(
            (page.data, page.has_more),
            (vec!["c".into(), "b".into()], true)
        );
        let page = page_of(items(), id, &request(2, Order::Desc, Some("b"))).unwrap();
        assert_eq!((page.data, page.has_more), (vec!["a".into()], false));
        let page = page_of(items(), id, &request(2, Order::Asc, Some("a"))).unwrap();
        assert_eq!(
            (page.data, page.has_more),
            (vec!["b".into(), "c".into()], false)
        );
        assert!(matches!(
            page_of(items(), id, &request(2, Order::Asc, Some("zz"))),
            Err(StoreError::UnknownCursor(_))
        ));
    }
}
