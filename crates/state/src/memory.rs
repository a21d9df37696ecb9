//! An in-process store for tests: the same rules as the databases (owner scoping, conflicts,
//! versions, size bounds, recovery), nothing durable. Clones share one store.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use futures::future::BoxFuture;

use crate::codec::{encode_conversation, failed_body, file_length, StoredResponse, FAILED};
use crate::page::page_of;
use crate::{
    ConversationRecord, FileFilter, FileRecord, Page, PageRequest, ResponseRecord, Store,
    StoreError, Unix, RUNNING_STATUSES,
};

/// Responses, conversations and files in memory.
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
    max_file_bytes: u64,
}

#[derive(Default)]
struct Inner {
    responses: HashMap<String, ResponseRecord>,
    conversations: HashMap<String, ConversationRecord>,
    /// With the order they were first stored in, which breaks `created_at` ties when listing.
    files: HashMap<String, (u64, FileRecord, Bytes)>,
    next_seq: u64,
    /// Answered approval requests: (owner, response id, request id).
    answered: HashSet<(String, String, String)>,
}

impl MemoryStore {
    pub fn new(max_file_bytes: u64) -> Self {
        MemoryStore {
            inner: Arc::default(),
            max_file_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ready<T: Send + 'static>(
        result: Result<T, StoreError>,
    ) -> BoxFuture<'static, Result<T, StoreError>> {
        Box::pin(std::future::ready(result))
    }
}

impl Inner {
    /// The bytes of the owner's files, `except` left out.
    fn usage(&self, owner: &str, except: Option<&str>) -> u64 {
        self.files
            .values()
            .filter(|(_, f, _)| f.owner == owner && Some(f.id.as_str()) != except)
            .map(|(_, f, _)| f.bytes)
            .sum()
    }
}

impl MemoryStore {
    /// The owner's files of `filter`, newest first.
    fn listed(&self, owner: &str, filter: &FileFilter) -> Vec<FileRecord> {
        let inner = self.lock();
        let mut files: Vec<(u64, FileRecord)> = inner
            .files
            .values()
            .filter(|(_, f, _)| {
                f.owner == owner
                    && match filter {
                        FileFilter::Uploads => f.container.is_none(),
                        FileFilter::Container(name) => f.container.as_ref() == Some(name),
                        FileFilter::All => true,
                    }
            })
            .map(|(seq, f, _)| (*seq, f.clone()))
            .collect();
        files.sort_by(|(sa, a), (sb, b)| b.created_at.cmp(&a.created_at).then(sb.cmp(sa)));
        files.into_iter().map(|(_, f)| f).collect()
    }

    fn put_file_quota(
        &self,
        mut meta: FileRecord,
        content: Bytes,
        quota: Option<u64>,
    ) -> Result<(), StoreError> {
        file_length(&meta, content.len(), self.max_file_bytes)?;
        meta.bytes = content.len() as u64;
        let mut inner = self.lock();
        if let Some(quota) = quota {
            let used = inner.usage(&meta.owner, Some(&meta.id));
            crate::limits::within_quota(used, content.len(), quota)?;
        }
        let seq = match inner.files.get(&meta.id) {
            Some((_, old, _)) if old.owner != meta.owner => {
                return Err(StoreError::Conflict(format!("file {}", meta.id)));
            }
            Some((seq, _, _)) => *seq,
            None => {
                inner.next_seq += 1;
                inner.next_seq
            }
        };
        inner.files.insert(meta.id.clone(), (seq, meta, content));
        Ok(())
    }
}

fn running(status: &str) -> bool {
    RUNNING_STATUSES.contains(&status)
}

impl Store for MemoryStore {
    fn put_response(&self, r: &ResponseRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        // Encoded only to apply the databases' size bound.
        let result = StoredResponse::encode(r).and_then(|_| {
            let mut inner = self.lock();
            match inner.responses.get(&r.id) {
                Some(old) if old.owner != r.owner => {
                    Err(StoreError::Conflict(format!("response {}", r.id)))
                }
                _ => {
                    inner.responses.insert(r.id.clone(), r.clone());
                    Ok(())
                }
            }
        });
        Self::ready(result)
    }

    fn get_response(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<ResponseRecord>, StoreError>> {
        let found = self
            .lock()
            .responses
            .get(id)
            .filter(|r| r.owner == owner)
            .cloned();
        Self::ready(Ok(found))
    }

    fn delete_response(&self, owner: &str, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let mut inner = self.lock();
        let owned = inner.responses.get(id).is_some_and(|r| r.owner == owner);
        if owned {
            inner.responses.remove(id);
            inner.answered.retain(|(_, response, _)| response != id);
        }
        Self::ready(Ok(owned))
    }

    fn heartbeat(
        &self,
        instance: &str,
        ids: &[String],
        now: Unix,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let mut inner = self.lock();
        let mut stopped = Vec::new();
        for id in ids {
            if let Some(r) = inner.responses.get_mut(id) {
                if r.instance == instance && running(&r.status) {
                    r.updated_at = now;
                } else {
                    stopped.push(id.clone());
                }
            }
        }
        Self::ready(Ok(stopped))
    }

    fn recover(
        &self,
        instance: &str,
        stale_before: Unix,
        message: &str,
    ) -> BoxFuture<'_, Result<u64, StoreError>> {
        let mut inner = self.lock();
        let mut count = 0;
        for r in inner.responses.values_mut() {
            if running(&r.status) && (r.instance == instance || r.updated_at < stale_before) {
                r.status = FAILED.into();
                r.body = failed_body(std::mem::take(&mut r.body), message);
                count += 1;
            }
        }
        Self::ready(Ok(count))
    }

    fn expire(&self, now: Unix) -> BoxFuture<'_, Result<u64, StoreError>> {
        let mut inner = self.lock();
        let expired = |at: Option<Unix>| at.is_some_and(|at| at < now);
        let before = inner.responses.len() + inner.files.len();
        inner.responses.retain(|_, r| !expired(r.expires_at));
        inner.files.retain(|_, (_, f, _)| !expired(f.expires_at));
        let after = inner.responses.len() + inner.files.len();
        let Inner {
            responses,
            answered,
            ..
        } = &mut *inner;
        answered.retain(|(_, response, _)| responses.contains_key(response));
        Self::ready(Ok((before - after) as u64))
    }

    fn claim_approvals(
        &self,
        owner: &str,
        response_id: &str,
        request_ids: &[String],
        _now: Unix,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let mut inner = self.lock();
        let keys: Vec<(String, String, String)> = crate::claim_order(request_ids)
            .into_iter()
            .map(|id| (owner.to_owned(), response_id.to_owned(), id))
            .collect();
        let answered_before: Vec<String> = keys
            .iter()
            .filter(|key| inner.answered.contains(*key))
            .map(|(_, _, id)| id.clone())
            .collect();
        if answered_before.is_empty() {
            inner.answered.extend(keys);
        }
        Self::ready(Ok(answered_before))
    }

    fn put_conversation(
        &self,
        c: ConversationRecord,
        expected_version: Option<i64>,
    ) -> BoxFuture<'_, Result<ConversationRecord, StoreError>> {
        let result = encode_conversation(&c).and_then(|_| {
            let mut inner = self.lock();
            let conflict = || StoreError::Conflict(format!("conversation {}", c.id));
            let stored = match (expected_version, inner.conversations.get(&c.id)) {
                (None, None) => ConversationRecord { version: 1, ..c },
                (Some(v), Some(old)) if old.owner == c.owner && old.version == v => {
                    ConversationRecord {
                        created_at: old.created_at,
                        version: v + 1,
                        ..c
                    }
                }
                _ => return Err(conflict()),
            };
            inner
                .conversations
                .insert(stored.id.clone(), stored.clone());
            Ok(stored)
        });
        Self::ready(result)
    }

    fn get_conversation(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<ConversationRecord>, StoreError>> {
        let found = self
            .lock()
            .conversations
            .get(id)
            .filter(|c| c.owner == owner)
            .cloned();
        Self::ready(Ok(found))
    }

    fn delete_conversation(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let mut inner = self.lock();
        let owned = inner
            .conversations
            .get(id)
            .is_some_and(|c| c.owner == owner);
        if owned {
            inner.conversations.remove(id);
        }
        Self::ready(Ok(owned))
    }

    fn put_file(&self, meta: FileRecord, content: Bytes) -> BoxFuture<'_, Result<(), StoreError>> {
        Self::ready(self.put_file_quota(meta, content, None))
    }

    fn get_file(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<FileRecord>, StoreError>> {
        let found = self
            .lock()
            .files
            .get(id)
            .filter(|(_, f, _)| f.owner == owner)
            .map(|(_, f, _)| f.clone());
        Self::ready(Ok(found))
    }

    fn file_content(
        &self,
        owner: &str,
        id: &str,
    ) -> BoxFuture<'_, Result<Option<Bytes>, StoreError>> {
        let found = self
            .lock()
            .files
            .get(id)
            .filter(|(_, f, _)| f.owner == owner)
            .map(|(_, _, content)| content.clone());
        Self::ready(Ok(found))
    }

    fn list_files(
        &self,
        owner: &str,
        filter: FileFilter,
    ) -> BoxFuture<'_, Result<Vec<FileRecord>, StoreError>> {
        Self::ready(Ok(self.listed(owner, &filter)))
    }

    fn delete_file(&self, owner: &str, id: &str) -> BoxFuture<'_, Result<bool, StoreError>> {
        let mut inner = self.lock();
        let owned = inner
            .files
            .get(id)
            .is_some_and(|(_, f, _)| f.owner == owner);
        if owned {
            inner.files.remove(id);
        }
        Self::ready(Ok(owned))
    }

    fn list_files_page(
        &self,
        owner: &str,
        filter: FileFilter,
        page: PageRequest,
    ) -> BoxFuture<'_, Result<Page<FileRecord>, StoreError>> {
        let files = self.listed(owner, &filter);
        let files: Vec<FileRecord> = files
            .into_iter()
            .rev()
            // The cursor stays whatever its purpose, as in the databases' queries.
            .filter(|f| {
                page.purpose.as_ref().is_none_or(|p| *p == f.purpose)
                    || page.after.as_deref() == Some(f.id.as_str())
            })
            .collect();
        Self::ready(page_of(files, |f| Some(f.id.as_str()), &page))
    }

    fn file_usage(&self, owner: &str) -> BoxFuture<'_, Result<u64, StoreError>> {
        Self::ready(Ok(self.lock().usage(owner, None)))
    }

    fn put_file_within(
        &self,
        meta: FileRecord,
        content: Bytes,
        quota: u64,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        Self::ready(self.put_file_quota(meta, content, Some(quota)))
    }
}
