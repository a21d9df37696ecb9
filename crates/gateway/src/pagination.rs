//! OpenAI's cursor pagination for every list endpoint: `limit`, `order` (`asc`|`desc` by
//! creation time, `desc` by default), `after` (the id of the last object of the previous page),
//! answered as `{"object": "list", "data", "first_id", "last_id", "has_more"}`.
//!
//! Files are paged by the store's query ([`toolbridge_state::Store::list_files_page`]); a
//! record's items (a response's input items, a conversation's items) by
//! [`toolbridge_state::page_of`] over the record already read. An `after` that names no object
//! of the list is a 400 naming `after`: a client walking pages learns its cursor is gone (the
//! object was deleted meanwhile) instead of silently getting the list from the start again or
//! an empty page that would end its walk early.

use serde::Deserialize;
use serde_json::{json, Value};
use toolbridge_state::{Order, Page, PageRequest, StoreError};

use crate::error::ApiError;

/// A list endpoint's `limit`: its default and its most (OpenAI's figures).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub default: usize,
    pub max: usize,
}

/// `GET /v1/files`: 10,000 by default and at most.
pub(crate) const FILES: Limits = Limits {
    default: 10_000,
    max: 10_000,
};

/// Items and container files: 20 by default, at most 100.
pub(crate) const ITEMS: Limits = Limits {
    default: 20,
    max: 100,
};

/// The query of a list endpoint. Kept as text so that a bad value gets our 400, not the
/// extractor's plain-text answer.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListQuery {
    limit: Option<String>,
    order: Option<String>,
    after: Option<String>,
    /// `GET /v1/files` only.
    purpose: Option<String>,
}

impl ListQuery {
    /// The page asked for. A `limit` outside 1..=max is brought into it (as before: lenient);
    /// one that is not a number, or an `order` other than `asc`/`desc`, is a 400.
    pub(crate) fn page(&self, limits: Limits) -> Result<PageRequest, ApiError> {
        let limit = match self.limit.as_deref().map(str::trim) {
            None | Some("") => limits.default,
            Some(text) => text.parse::<usize>().map_err(|_| {
                ApiError::bad_param("limit", "Invalid 'limit': expected an integer.")
            })?,
        };
        let order = match self.order.as_deref() {
            None | Some("desc") => Order::Desc,
            Some("asc") => Order::Asc,
            Some(_) => {
                return Err(ApiError::bad_param(
                    "order",
                    "Invalid 'order': expected 'asc' or 'desc'.",
                ))
            }
        };
        Ok(PageRequest {
            limit: limit.clamp(1, limits.max),
            order,
            after: self.after.clone().filter(|a| !a.is_empty()),
            purpose: self.purpose.clone(),
        })
    }
}

/// A page as OpenAI's list object; `id` reads an object's id for `first_id`/`last_id`.
pub(crate) fn list_object(page: Page<Value>) -> Value {
    let id = |v: Option<&Value>| v.and_then(|v| v["id"].as_str()).map(str::to_owned);
    let (first, last) = (id(page.data.first()), id(page.data.last()));
    json!({
        "object": "list",
        "data": page.data,
        "first_id": first,
        "last_id": last,
        "has_more": page.has_more,
    })
}

/// The answer to a cursor the list does not hold.
pub(crate) fn unknown_cursor(after: &str) -> ApiError {
    let shown: String = after.chars().take(200).collect();
    let mut e = ApiError::bad_param(
        "after",
        format!("Invalid 'after': no object with id '{shown}' in this list."),
    );
    e.code = Some("invalid_cursor".into());
    e
}

impl ListQuery {
    /// The page of a record's items asked for, checked before the record is looked up (a bad
    /// `limit` is the client's 400 whether or not the record exists).
    pub(crate) fn items(&self) -> Result<PageRequest, ApiError> {
        self.page(ITEMS)
    }
}

/// One page of a record's items (oldest first as stored), as OpenAI's list object.
pub(crate) fn items_page(items: Vec<Value>, request: &PageRequest) -> Result<Value, ApiError> {
    match toolbridge_state::page_of(items, |i| i["id"].as_str(), request) {
        Ok(page) => Ok(list_object(page)),
        Err(StoreError::UnknownCursor(after)) => Err(unknown_cursor(&after)),
        Err(e) => {
            tracing::error!(error = %e, "paging items");
            Err(ApiError::internal())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn query(limit: Option<&str>, order: Option<&str>, after: Option<&str>) -> ListQuery {
        ListQuery {
            limit: limit.map(str::to_owned),
            order: order.map(str::to_owned),
            after: after.map(str::to_owned),
            purpose: None,
        }
    }

    /// A page of `items` for the query (both steps a handler takes).
    fn page(items: &[Value], q: &ListQuery) -> Result<Value, ApiError> {
        items_page(items.to_vec(), &q.items()?)
    }

    #[test]
    fn items_are_paged_with_cursors_and_bad_queries_are_400() {
        let items: Vec<Value> = (1..=3).map(|i| json!({"id": format!("msg_{i}")})).collect();
        let first = page(&items, &query(Some("2"), None, None)).unwrap();
        assert_eq!(
            first,
            json!({"object": "list", "data": [{"id": "msg_3"}, {"id": "msg_2"}],
                   "first_id": "msg_3", "last_id": "msg_2", "has_more": true})
        );
        let next = page(&items, &query(Some("2"), None, Some("msg_2"))).unwrap();
        assert_eq!(next["data"], json!([{"id": "msg_1"}]));
        assert_eq!(next["has_more"], false);
        let all = page(&items, &query(Some("500"), Some("asc"), None)).unwrap();
        assert_eq!(all["data"].as_array().unwrap().len(), 3);
        let e = page(&items, &query(None, None, Some("msg_9"))).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.param.as_deref()),
            (400, Some("after"))
        );
        // A bad limit or order is refused before any record is looked up.
        let e = query(Some("x"), None, None).items().unwrap_err();
        assert_eq!(e.param.as_deref(), Some("limit"));
        let e = query(None, Some("newest"), None).items().unwrap_err();
        assert_eq!(e.param.as_deref(), Some("order"));
    }
}
