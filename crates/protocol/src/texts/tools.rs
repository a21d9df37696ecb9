//! The texts of the built-in tools of `toolbridge-tools` (network, search, fetch, images,
//! memory, attachments) and the truncation note of long tool output. All ours except the
//! truncation note's template (seed 002).

use super::fill;
use super::reference::TRUNCATION_NOTE_TEMPLATE;

/// Ours: a fetch the guard or the network refused; placeholders `<URL>`, `<REASON>` (one of the
/// `NET_*` reasons below).
pub const FETCH_FAILED: &str = "Could not fetch <URL>: <REASON>.";
/// Ours: reason; placeholder `<DETAIL>`.
pub const NET_BAD_URL: &str = "it is not a valid URL (<DETAIL>)";
/// Ours: reason; placeholder `<SCHEME>`.
pub const NET_SCHEME: &str = "only http and https URLs can be fetched, not <SCHEME>";
/// Ours: reason.
pub const NET_USERINFO: &str = "URLs with a user name or password are not fetched";
/// Ours: reason.
pub const NET_NO_HOST: &str = "the URL has no host";
/// Ours: reason; placeholders `<PORT>`, `<PORTS>`.
pub const NET_PORT: &str = "port <PORT> is not allowed (allowed: <PORTS>)";
/// Ours: reason; placeholder `<HOST>`.
pub const NET_NAME_DENIED: &str = "<HOST> is an internal host name";
/// Ours: reason; placeholder `<ADDRESS>` (`1.2.3.4` or `name (1.2.3.4)`).
pub const NET_ADDRESS_RESERVED: &str = "<ADDRESS> is an internal or reserved address";
/// Ours: reason; placeholder `<ADDRESS>`.
pub const NET_ADDRESS_POLICY: &str = "<ADDRESS> is blocked by this server's policy";
/// Ours: reason; placeholder `<ADDRESS>`.
pub const NET_ADDRESS_OWN: &str = "<ADDRESS> is this server's own address";
/// Ours: reason; placeholder `<HOST>`.
pub const NET_DNS_TIMEOUT: &str = "looking up <HOST> took too long";
/// Ours: reason; placeholder `<HOST>`.
pub const NET_DNS_FAILED: &str = "<HOST> could not be resolved";
/// Ours: reason; placeholder `<COUNT>`.
pub const NET_TOO_MANY_REDIRECTS: &str = "it redirected more than <COUNT> times";
/// Ours: reason.
pub const NET_BAD_REDIRECT: &str = "it redirected to an invalid location";
/// Ours: reason; placeholder `<LIMIT>` (bytes).
pub const NET_TOO_LARGE: &str = "the response is larger than <LIMIT> bytes";
/// Ours: reason; placeholder `<SECONDS>`.
pub const NET_DEADLINE: &str = "it did not complete within <SECONDS> seconds";
/// Ours: reason.
pub const NET_CONNECT: &str = "the server could not be reached";
/// Ours: reason; placeholder `<STATUS>`.
pub const NET_STATUS: &str = "the server answered with HTTP status <STATUS>";
/// Ours: reason; placeholder `<ENCODING>`.
pub const NET_ENCODING: &str = "the response could not be decoded (<ENCODING>)";
/// Ours: reason; placeholder `<TYPE>`.
pub const NET_NOT_TEXT: &str = "its content type <TYPE> is not a web page or text";
/// Ours: reason; placeholder `<TYPE>`.
pub const NET_NOT_IMAGE: &str = "it is not an image (content type <TYPE>)";
/// Ours: reason.
pub const NET_BAD_IMAGE: &str = "its content is not a PNG, JPEG, GIF, WebP or BMP image";

/// Ours: one page of a `web_fetch` result; placeholders `<TITLE>`, `<URL>` (the final URL after
/// redirects), `<TEXT>` (the main text as markdown).
pub const WEB_FETCH_PAGE: &str = "Title: <TITLE>\nURL: <URL>\n\n<TEXT>";
/// Ours: between the pages of one `web_fetch` result.
pub const WEB_FETCH_SEPARATOR: &str = "\n\n---\n\n";
/// Ours: a `web_fetch` call without `url` or `urls`.
pub const WEB_FETCH_NO_URL: &str = "Pass url or urls (at most 4 URLs).";
/// Ours: a `fetch_image` success; placeholders `<PATH>`, `<TYPE>`, `<BYTES>`.
pub const FETCH_IMAGE_SAVED: &str = "Saved the image to <PATH> (<TYPE>, <BYTES> bytes).";
/// Ours: a tool that writes files called in a run without a conversation workspace.
pub const NO_WORKSPACE: &str = "This tool needs a conversation workspace, and this run has none.";
/// Ours: appended to the user's message when files were attached (`toolbridge run --attach`);
/// placeholder `<FILES>` (one [`ATTACHED_FILE`] line per file).
pub const ATTACHMENTS_NOTE: &str = "Attached files (copied into the conversation workspace, readable with python_execute):\n<FILES>";
/// Ours: one attached file; placeholders `<PATH>` (the sandbox path), `<BYTES>`.
pub const ATTACHED_FILE: &str = "- <PATH> (<BYTES> bytes)";

/// One line of [`ATTACHMENTS_NOTE`].
pub fn attached_file_line(path: &str, bytes: u64) -> String {
    ATTACHED_FILE
        .replace("<PATH>", path)
        .replace("<BYTES>", &bytes.to_string())
}

/// The note listing attached files, from [`attached_file_line`]s.
pub fn attachments_note(lines: &[String]) -> String {
    ATTACHMENTS_NOTE.replace("<FILES>", &lines.join("\n"))
}

/// Ours: `web_search` when no backend is configured.
pub const SEARCH_NOT_CONFIGURED: &str = "Web search is not configured on this server, so no search was run. Answer from what you already know, or ask the user for sources.";
/// Ours: a `web_search` call without `query` or `queries`.
pub const SEARCH_NO_QUERY: &str = "Pass query or queries (at most 5 queries).";
/// Ours: the header of one query's results; placeholder `<QUERY>`.
pub const SEARCH_HEADER: &str = "Results for \"<QUERY>\":";
/// Ours: one search result; placeholders `<N>`, `<TITLE>`, `<URL>`, `<SNIPPET>`.
pub const SEARCH_RESULT: &str = "<N>. <TITLE>\n   <URL>\n   <SNIPPET>";
/// Ours: a query without results; placeholder `<QUERY>`.
pub const SEARCH_NO_RESULTS: &str = "No results for \"<QUERY>\".";
/// Ours: a failed query; placeholders `<QUERY>`, `<REASON>`.
pub const SEARCH_FAILED: &str = "The search for \"<QUERY>\" failed: <REASON>.";

/// Ours: `image_generate` when no images endpoint is configured.
pub const IMAGES_NOT_CONFIGURED: &str = "Image generation is not configured on this server.";
/// Ours: `image_generate` results; placeholder `<PATHS>` (one per line).
pub const IMAGES_SAVED: &str = "The images were written to:\n<PATHS>";
/// Ours: the images endpoint failed; placeholder `<REASON>`.
pub const IMAGES_FAILED: &str = "The image service failed: <REASON>.";
/// Ours: arguments that do not fit together.
pub const IMAGES_BAD_BASE: &str = "For action=generate use base_image=none; for action=edit choose base_image=previous_generation or base_image=current_attachment with base_image_index.";
/// Ours: an edit of the previous generation when there is none.
pub const IMAGES_NO_PREVIOUS: &str =
    "There is no earlier generated image in this conversation to edit.";
/// Ours: an edit of an attachment that does not exist; placeholders `<INDEX>`, `<COUNT>`.
pub const IMAGES_NO_ATTACHMENT: &str =
    "There is no image attachment number <INDEX> in /workspace/uploads/ (there are <COUNT>).";
/// Ours: an edit of an attachment number this turn does not have; placeholders `<INDEX>`,
/// `<COUNT>` (the images attached to this turn's message).
pub const IMAGES_NO_TURN_ATTACHMENT: &str = "There is no image number <INDEX> among the images attached to this turn's message (there are <COUNT>, numbered from 1 in the order they were attached).";
/// Ours: `base_image=current_attachment` in a turn whose message has no image attached.
pub const IMAGES_NO_TURN_IMAGES: &str = "No image is attached to this turn's message, so there is no current_attachment to edit. Use base_image=previous_generation to edit the last generated image, or ask the user to attach the image.";
/// Ours: an image to send that the service would refuse; placeholders `<PATH>`, `<MIB>`.
pub const IMAGES_TOO_LARGE: &str = "<PATH> is larger than the image service accepts (<MIB> MiB).";
/// Ours: a base image whose content is not an image; placeholder `<PATH>`.
pub const IMAGES_NOT_AN_IMAGE: &str = "<PATH> is not a PNG, JPEG, GIF, WebP or BMP image.";
/// Ours: after [`IMAGES_SAVED`]: the size asked of the service; placeholder `<SIZE>`.
pub const IMAGES_SIZE: &str = "Size: <SIZE>.";
/// Ours: after [`IMAGES_SAVED`]: the copies staged beside the uploads.
pub const IMAGES_STAGED: &str =
    "Copies are also staged in /workspace/uploads/ under the same file names.";

/// Ours: `save_memory` success.
pub const MEMORY_SAVED: &str = "Saved to memory.";
/// Ours: the header of the system message that gives a run the user's ACTIVE memories (one per
/// line after it, `- ` first).
pub const MEMORY_HEADER: &str = "Facts the user asked you to remember in earlier conversations:";

/// A guard refusal or fetch failure reason, filled (see the `NET_*` texts).
pub fn net_reason(template: &str, values: &[(&str, &str)]) -> String {
    fill(template, values)
}

/// `FETCH_FAILED` filled.
pub fn fetch_failed(url: &str, reason: &str) -> String {
    fill(FETCH_FAILED, &[("<URL>", url), ("<REASON>", reason)])
}

/// One `web_fetch` page.
pub fn web_fetch_page(title: &str, url: &str, text: &str) -> String {
    fill(
        WEB_FETCH_PAGE,
        &[("<TITLE>", title), ("<URL>", url), ("<TEXT>", text)],
    )
}

/// A `fetch_image` success.
pub fn fetch_image_saved(path: &str, content_type: &str, bytes: usize) -> String {
    fill(
        FETCH_IMAGE_SAVED,
        &[
            ("<PATH>", path),
            ("<TYPE>", content_type),
            ("<BYTES>", &bytes.to_string()),
        ],
    )
}

/// The header of one query's results.
pub fn search_header(query: &str) -> String {
    fill(SEARCH_HEADER, &[("<QUERY>", query)])
}

/// One search result (1-based `n`).
pub fn search_result(n: usize, title: &str, url: &str, snippet: &str) -> String {
    fill(
        SEARCH_RESULT,
        &[
            ("<N>", &n.to_string()),
            ("<TITLE>", title),
            ("<URL>", url),
            ("<SNIPPET>", snippet),
        ],
    )
}

pub fn search_no_results(query: &str) -> String {
    fill(SEARCH_NO_RESULTS, &[("<QUERY>", query)])
}

pub fn search_failed(query: &str, reason: &str) -> String {
    fill(SEARCH_FAILED, &[("<QUERY>", query), ("<REASON>", reason)])
}

/// `image_generate` results.
pub fn images_saved(paths: &[String]) -> String {
    fill(IMAGES_SAVED, &[("<PATHS>", &paths.join("\n"))])
}

pub fn images_failed(reason: &str) -> String {
    fill(IMAGES_FAILED, &[("<REASON>", reason)])
}

pub fn images_no_attachment(index: u64, count: usize) -> String {
    fill(
        IMAGES_NO_ATTACHMENT,
        &[
            ("<INDEX>", &index.to_string()),
            ("<COUNT>", &count.to_string()),
        ],
    )
}

/// [`IMAGES_NO_TURN_ATTACHMENT`] filled.
pub fn images_no_turn_attachment(index: u64, count: usize) -> String {
    fill(
        IMAGES_NO_TURN_ATTACHMENT,
        &[
            ("<INDEX>", &index.to_string()),
            ("<COUNT>", &count.to_string()),
        ],
    )
}

/// [`IMAGES_TOO_LARGE`] filled.
pub fn images_too_large(path: &str, mib: usize) -> String {
    fill(
        IMAGES_TOO_LARGE,
        &[("<PATH>", path), ("<MIB>", &mib.to_string())],
    )
}

/// [`IMAGES_NOT_AN_IMAGE`] filled.
pub fn images_not_an_image(path: &str) -> String {
    fill(IMAGES_NOT_AN_IMAGE, &[("<PATH>", path)])
}

/// [`IMAGES_SIZE`] filled.
pub fn images_size(size: &str) -> String {
    fill(IMAGES_SIZE, &[("<SIZE>", size)])
}

/// The system message giving a run the user's ACTIVE memories (`None` when there are none).
pub fn memory_block(memories: &[String]) -> Option<String> {
    if memories.is_empty() {
        return None;
    }
    let mut s = String::from(MEMORY_HEADER);
    for m in memories {
        s.push_str("\n- ");
        s.push_str(&m.replace('\n', " "));
    }
    Some(s)
}

/// The note appended to truncated tool output, giving the total size in characters.
pub fn truncation_note(total_chars: usize) -> String {
    fill(
        TRUNCATION_NOTE_TEMPLATE,
        &[("{len(result)}", &total_chars.to_string())],
    )
}

/// Ours: a `python_execute` or `run_in_terminal` call refused because the conversation's
/// workspace holds more than its quota (`[tools.workspaces] max_size_mb`); placeholders
/// `<USED>` and `<QUOTA>` (MiB).
pub const WORKSPACE_OVER_QUOTA: &str = "The workspace (/workspace) holds <USED> MiB, more than its quota of <QUOTA> MiB, so no code runs in it until files are deleted. Delete files that are no longer needed with run_in_terminal and a command that only removes files (for example `rm /workspace/outputs/big.csv`), which is allowed while the workspace is over its quota, or tell the user that this conversation's workspace is full and files must be deleted.";

/// Ours: appended to the result of a call after which the workspace holds more than its quota;
/// placeholders `<USED>` and `<QUOTA>` (MiB).
pub const WORKSPACE_NOW_OVER_QUOTA: &str = "[The workspace now holds <USED> MiB, more than its quota of <QUOTA> MiB: delete files (rm) before running more code.]";

/// [`WORKSPACE_OVER_QUOTA`] with its figures.
pub fn workspace_over_quota(used_mib: u64, quota_mib: u64) -> String {
    super::fill(
        WORKSPACE_OVER_QUOTA,
        &[
            ("<USED>", &used_mib.to_string()),
            ("<QUOTA>", &quota_mib.to_string()),
        ],
    )
}

/// [`WORKSPACE_NOW_OVER_QUOTA`] with its figures.
pub fn workspace_now_over_quota(used_mib: u64, quota_mib: u64) -> String {
    super::fill(
        WORKSPACE_NOW_OVER_QUOTA,
        &[
            ("<USED>", &used_mib.to_string()),
            ("<QUOTA>", &quota_mib.to_string()),
        ],
    )
}
