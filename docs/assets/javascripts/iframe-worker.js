// A Worker for the site opened from disk. Browsers start no worker from a
// file:// page, and the theme runs its search in one: there, the worker's
// script runs in a hidden frame of the page instead, with the worker's
// globals (postMessage, importScripts, "message" events). The theme's offline
// support looks for a script of this name before it would fetch one from the
// network, and its search worker finds its libraries through IFrameWorker.
(function () {
  "use strict";
  if (location.protocol !== "file:") {
    return;
  }

  function loadScripts(scope, urls, base) {
    return urls.reduce(function (done, url) {
      return done.then(function () {
        return new Promise(function (resolve, reject) {
          var script = scope.document.createElement("script");
          script.src = new URL(url, base).href;
          script.onload = resolve;
          script.onerror = function () { reject(new Error("cannot load " + script.src)); };
          scope.document.head.appendChild(script);
        });
      });
    }, Promise.resolve());
  }

  class IFrameWorker extends EventTarget {
    constructor(url) {
      super();
      var worker = this;
      var href = new URL(url, location.href).href;
      this.frame = document.createElement("iframe");
      this.frame.hidden = true;
      document.body.appendChild(this.frame);
      var scope = this.frame.contentWindow;
      scope.importScripts = function () {
        return loadScripts(scope, Array.prototype.slice.call(arguments), href);
      };
      scope.postMessage = function (data) {
        setTimeout(function () {
          var event = new MessageEvent("message", { data: data });
          if (typeof worker.onmessage === "function") { worker.onmessage(event); }
          worker.dispatchEvent(event);
        });
      };
      this.deliver = function (data) {
        scope.dispatchEvent(new scope.MessageEvent("message", { data: data }));
      };
      this.waiting = [];
      loadScripts(scope, [href], href).then(function () {
        var waiting = worker.waiting;
        worker.waiting = null;
        waiting.forEach(worker.deliver);
      }, function (error) {
        worker.dispatchEvent(new ErrorEvent("error", { message: String(error) }));
      });
    }

    postMessage(data) {
      if (this.waiting) { this.waiting.push(data); } else { this.deliver(data); }
    }

    terminate() {
      this.frame.remove();
    }
  }

  window.IFrameWorker = IFrameWorker;
  window.Worker = IFrameWorker;
})();
