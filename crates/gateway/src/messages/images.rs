//! Images a Messages request gives by URL (`"source": {"type": "url"}`): the gateway fetches
//! them and sends them on inline (`data:` URLs), so every upstream gets them — OpenAI-compatible
//! servers and local models often cannot fetch, and an upstream that can would fetch from its
//! own network on a client's word. The fetch goes through the same guard as `web_fetch`
//! (public addresses only unless `[tools.fetch]` allows more, its ports, redirects checked
//! again, a deadline), at most 20 MiB, and the bytes must sniff as an image.

use base64::Engine as _;
use toolbridge_protocol::types::{ChatRequest, Content, ContentPart, Message};
use toolbridge_tools::net::Guard;

use crate::error::ApiError;

/// At most this many images by URL in one request (each is a fetch of up to 20 MiB).
const MAX_URL_IMAGES: usize = 20;

/// Replaces every http(s) image URL of `request` (only images given by URL have one: the
/// decoder turns base64 images into `data:` URLs) with the fetched image. `guard` is `None`
/// when `server.fetch_image_urls` is off: then they are refused.
pub(crate) async fn inline_remote_images(
    request: &mut ChatRequest,
    guard: Option<&Guard>,
) -> Result<(), ApiError> {
    let mut parts: Vec<&mut String> = Vec::new();
    for message in &mut request.messages {
        let content = match message {
            Message::User { content, .. } | Message::Tool { content, .. } => content,
            _ => continue,
        };
        if let Content::Parts(list) = content {
            for part in list {
                if let ContentPart::ImageUrl { image_url } = part {
                    if is_remote(&image_url.url) {
                        parts.push(&mut image_url.url);
                    }
                }
            }
        }
    }
    if parts.is_empty() {
        return Ok(());
    }
    let Some(guard) = guard else {
        return Err(ApiError::bad_param(
            "messages",
            "Images by URL are turned off on this gateway (server.fetch_image_urls); send the \
             image as base64.",
        ));
    };
    if parts.len() > MAX_URL_IMAGES {
        return Err(ApiError::bad_param(
            "messages",
            format!(
                "At most {MAX_URL_IMAGES} images by URL per request; send the others as base64."
            ),
        ));
    }
    for url in parts {
        match toolbridge_tools::fetch_image::fetch_verified(guard, url).await {
            Ok((kind, bytes)) => {
                let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
                *url = format!("data:{};base64,{data}", kind.mime());
            }
            Err(reason) => {
                // Not the URL itself: its query may carry a client's token.
                tracing::warn!(reason = %reason, "messages: an image by URL could not be fetched");
                return Err(ApiError::bad_param(
                    "messages",
                    format!("The image at {url} could not be fetched: {reason}"),
                ));
            }
        }
    }
    Ok(())
}

fn is_remote(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://")
}
