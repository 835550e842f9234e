//! A server the addon runs for the app (an MCP endpoint, the approval inbox): its URL, a way
//! to stop it, and a promise that keeps Node alive until it stopped, like an `http.Server`.

use napi::Env;
use napi::bindgen_prelude::PromiseRaw;
use napi_derive::napi;
use tokio::sync::watch;
use tooljig::CancellationToken;

/// A running server.
#[napi(js_name = "NativeServer")]
pub struct JsServer {
    url: String,
    stop: CancellationToken,
    stopped: watch::Receiver<bool>,
}

impl JsServer {
    /// A server at `url`, stopped by `stop`, whose `task` ends when it stopped.
    pub fn new(url: String, stop: CancellationToken, task: tokio::task::JoinHandle<()>) -> Self {
        let (done, stopped) = watch::channel(false);
        napi::bindgen_prelude::spawn(async move {
            let _ = task.await;
            let _ = done.send(true);
        });
        JsServer { url, stop, stopped }
    }
}

#[napi]
impl JsServer {
    /// The server's URL.
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Stops the server.
    #[napi]
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Resolves once the server stopped.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn stopped<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let mut stopped = self.stopped.clone();
        env.spawn_future(async move {
            let _ = stopped.wait_for(|done| *done).await;
            Ok(())
        })
    }
}
