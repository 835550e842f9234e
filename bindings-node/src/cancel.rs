//! Cancellation from JavaScript: the JS layer fires a `NativeCancel` when the run's
//! `AbortSignal` aborts; running calls end as `cancelled` and their handlers' signals fire.

use napi_derive::napi;
use tooljig::CancellationToken;

/// A cancellation switch for one batch.
#[napi(js_name = "NativeCancel")]
#[derive(Default)]
pub struct JsCancel {
    pub(crate) token: CancellationToken,
}

#[napi]
impl JsCancel {
    /// A switch that has not fired.
    #[napi(constructor)]
    pub fn new() -> Self {
        JsCancel::default()
    }

    /// Cancels the batch this switch was given to (and any started later with it).
    #[napi]
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Whether `cancel` was called.
    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}
