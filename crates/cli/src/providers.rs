//! The providers of this build: the built-in ones, and the embedded model when the CLI is built
//! with the `embedded` feature (the default). Without it, asking for the embedded provider —
//! which is also the default when no model is configured — says that it is not in this build.

use toolbridge_providers::ProviderRegistry;

/// Why the embedded provider is missing from a build without the feature.
#[cfg(not(feature = "embedded"))]
pub const EMBEDDED_ABSENT: &str = "built without the `embedded` feature";

pub fn registry() -> ProviderRegistry {
    let mut registry = ProviderRegistry::new();
    #[cfg(feature = "embedded")]
    registry.register(std::sync::Arc::new(toolbridge_embedded::EmbeddedFactory));
    #[cfg(not(feature = "embedded"))]
    registry.absent("embedded", EMBEDDED_ABSENT);
    registry
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::collections::BTreeMap;

    use super::*;

    #[cfg(feature = "embedded")]
    #[test]
    fn the_embedded_provider_is_registered() {
        let registry = registry();
        assert!(registry.has("embedded"));
        // Its settings are read by it (a path given twice is its own check).
        let err = registry
            .model_from_spec("embedded:/a.gguf", None, &BTreeMap::new())
            .err()
            .unwrap()
            .to_string();
        assert!(err.starts_with("loading /a.gguf: "), "{err}");
    }

    #[cfg(not(feature = "embedded"))]
    #[test]
    fn without_the_feature_the_embedded_provider_is_named_absent() {
        let registry = registry();
        assert!(!registry.has("embedded") && registry.knows("embedded"));
        for name in ["embedded", "embedded:/m.gguf"] {
            let err = registry
                .model_from_spec(name, None, &BTreeMap::new())
                .err()
                .unwrap()
                .to_string();
            assert_eq!(
                err,
                "configuration error: the embedded provider is not in this build (built without the `embedded` feature)"
            );
        }
    }
}
