//! Enums whose variants stand for fixed strings (upstream's text, or kubenode's wire values).

/// Declares `pub enum $name` whose variants each stand for one string, written once: `as_str`
/// returns it, and with the `napi` feature the same strings make the enum a napi string enum
/// named `$js`, so JavaScript receives exactly what Rust prints. A macro, because napi-derive
/// reads a variant's value only from a plain `#[napi(value = …)]`, never through `cfg_attr`.
/// Documentation is written `#[doc = "…"]`: a `///` comment passed through a macro reaches
/// napi-derive as a raw string, which it copies into the typings with its quotes.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident as $js:tt {
            $( $(#[$vmeta:meta])* $variant:ident = $value:tt, )*
        }
    ) => {
        #[cfg(feature = "napi")]
        $(#[$meta])*
        #[napi_derive::napi(string_enum, js_name = $js)]
        pub enum $name {
            $( $(#[$vmeta])* #[napi(value = $value)] $variant, )*
        }

        #[cfg(not(feature = "napi"))]
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// The variant's string.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $value, )*
                }
            }
        }
    };
}

pub(crate) use string_enum;
