"""What every mmjudge page (the Space, the leaderboard) adds to Gradio 6 that Gradio itself lacks.

* Gradio 6.31's status tracker announces a finished event to screen readers as ``t("common.complete")``,
  a key its own English strings do not hold, so the page's live region read "common.complete" after every
  event. :func:`launch_options` supplies the string (Gradio falls back to English for other languages).
* Uploads have a size limit and leave nothing behind (:func:`launch_page`). Gradio writes a multipart
  upload to a temporary file as it arrives and removes that file only when the body breaks its own
  ``max_file_size``; a client that leaves mid-upload (``ClientDisconnect``) left the partial file in the
  upload folder for good, and with no ``max_file_size`` a 1 GB body was taken whole. :class:`UploadGuard`
  answers 413 to a declared ``Content-Length`` over the limit before reading a byte, stops a body (chunked
  or not) once it passes the limit — any body, not only an upload's: a JSON body is read whole into memory
  (a 300 MB one cost a page 1.1 GB), and no page's JSON comes near an upload's size — and removes, when
  each request ends, every temporary file Gradio's
  multipart parser made for it that is still where the parser put it (a finished upload has been moved
  into the cache by then). Finished uploads are removed by Gradio an hour after they arrived
  (``delete_cache``).

>>> sorted(MISSING_TRANSLATIONS)
['common.complete']
>>> upload_limit_line(64 * 2**20)
'File size exceeded maximum allowed size of 67108864 bytes.'
>>> upload_limit_line(2**20, upload=False)
'Request body exceeded maximum allowed size of 1114112 bytes.'
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from typing import Any

MISSING_TRANSLATIONS = {"common.complete": "Done."}
# Finished uploads are deleted by Gradio this long after they arrived (checked as often): a page's inputs are
# needed only while their request runs.
UPLOAD_CACHE_S = 3600
# Room for a multipart body's boundaries and part headers around the file itself.
MULTIPART_SLACK_BYTES = 64 * 1024

# The temporary files Gradio's multipart parser made during the current request (None outside one).
_REQUEST_FILES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("mmjudge_upload_files", default=None)


def launch_options() -> dict[str, Any]:
    """Keyword arguments for ``Blocks.launch`` every page passes (Gradio imported here, on use)."""
    import gradio as gr

    return {"i18n": gr.I18n(en=dict(MISSING_TRANSLATIONS))}


def upload_limit_line(max_bytes: int, upload: bool = True) -> str:
    """The 413 answer: to an upload in the words of Gradio's own refusal (what gradio_client and the browser
    know); to another body, the most it may hold (``max_bytes`` and :data:`MULTIPART_SLACK_BYTES`)."""
    if upload:
        return f"File size exceeded maximum allowed size of {int(max_bytes)} bytes."
    return f"Request body exceeded maximum allowed size of {int(max_bytes) + MULTIPART_SLACK_BYTES} bytes."


def launch_page(demo: Any, max_upload_bytes: int, **kwargs: Any) -> Any:
    """``demo.launch(**kwargs)`` with :func:`launch_options`, uploads capped at ``max_upload_bytes`` per
    request (Gradio's ``max_file_size`` and :class:`UploadGuard`) and finished uploads deleted after
    :data:`UPLOAD_CACHE_S` (unless the Blocks set its own ``delete_cache``)."""
    from starlette.middleware import Middleware

    track_multipart_files()
    if getattr(demo, "delete_cache", None) is None:
        demo.delete_cache = (UPLOAD_CACHE_S, UPLOAD_CACHE_S)
    app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
    app_kwargs["middleware"] = [*app_kwargs.get("middleware", []), Middleware(UploadGuard, max_bytes=max_upload_bytes)]
    options = {**launch_options(), "max_file_size": int(max_upload_bytes), **kwargs}
    return demo.launch(app_kwargs=app_kwargs, **options)


def track_multipart_files() -> bool:
    """Have Gradio's multipart parser report the temporary files it makes (to :class:`UploadGuard`, through a
    context variable: only during a request, only that request's). Idempotent; ``False`` when this Gradio
    has no such parser (the guard then still caps sizes)."""
    from gradio import route_utils

    make = getattr(route_utils, "NamedTemporaryFile", None)
    if make is None:
        return False
    if getattr(make, "mmjudge_tracked", False):
        return True

    def tracked(*args: Any, **kwargs: Any) -> Any:
        handle = make(*args, **kwargs)
        files = _REQUEST_FILES.get()
        if files is not None:
            files.append(handle.name)
        return handle

    tracked.mmjudge_tracked = True  # type: ignore[attr-defined]
    route_utils.NamedTemporaryFile = tracked
    return True


class _BodyTooLarge(Exception):
    """The body passed the limit while it was being read."""


class UploadGuard:
    """ASGI middleware: request bodies (multipart or not) of at most ``max_bytes`` (plus
    :data:`MULTIPART_SLACK_BYTES`), and no temporary file of a request left behind (see the module's
    description)."""

    def __init__(self, app: Any, max_bytes: int):
        self.app, self.max_bytes = app, int(max_bytes)
        self.limit = self.max_bytes + MULTIPART_SLACK_BYTES

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        multipart = headers.get(b"content-type", b"").lower().startswith(b"multipart/")
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send, multipart)  # before reading a byte of it
            return
        received, started, too_large = 0, False, False

        async def counted() -> dict:
            nonlocal received, too_large
            if too_large:
                return {"type": "http.disconnect"}  # read on after the refusal: nothing more comes
            message = await receive()
            if message.get("type") == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    too_large = True
                    raise _BodyTooLarge
            return message

        async def sending(message: dict) -> None:
            nonlocal started
            if too_large:
                return  # the app's own answer to the cut body (Gradio's JSON routes say 400): ours is the 413
            started = started or message.get("type") == "http.response.start"
            await send(message)

        files: list[str] = []
        token = _REQUEST_FILES.set(files)
        try:
            await self.app(scope, counted, sending)
        except Exception as err:  # _BodyTooLarge, or what the app made of it
            if not too_large and type(err).__name__ != "ClientDisconnect":
                raise  # (a client that left mid-upload gets no answer: nothing to log either)
        finally:
            _REQUEST_FILES.reset(token)
            for name in files:  # still where the parser wrote it: an upload that did not finish
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name)
        if too_large and not started:
            await self._refuse(send, multipart)

    async def _refuse(self, send: Any, upload: bool) -> None:
        body = upload_limit_line(self.max_bytes, upload).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
