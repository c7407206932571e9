/// Error codes seen by JavaScript as `error.code`; `ts/errors.ts` maps them to error classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidArg,
    OutOfRange,
    Io,
    Permission,
    Parse,
    Conflict,
    Unsupported,
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Code::InvalidArg => "ERR_KUBENODE_INVALID_ARG",
            Code::OutOfRange => "ERR_KUBENODE_OUT_OF_RANGE",
            Code::Io => "ERR_KUBENODE_IO",
            Code::Permission => "ERR_KUBENODE_PERMISSION",
            Code::Parse => "ERR_KUBENODE_PARSE",
            Code::Conflict => "ERR_KUBENODE_CONFLICT",
            Code::Unsupported => "ERR_KUBENODE_UNSUPPORTED",
        }
    }
}

pub type Error = napi::Error<Code>;
pub type Result<T> = std::result::Result<T, Error>;

pub fn err(code: Code, message: impl std::fmt::Display) -> Error {
    napi::Error::new(code, message.to_string())
}
