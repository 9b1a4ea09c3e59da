"""Errors raised by the library, each carrying the exit code the command line uses for it.

A user's mistake (a missing file, a template that does not parse or does not render, a conversation
the template refuses, a template that runs past the limits) exits 2; a problem met while doing the work
(a format a backend cannot express, a failed download) exits 1; a server's problems exit 3 to 5.
The command line turns every ``AnalyzerError`` into one line on stderr, never a traceback.
"""

from __future__ import annotations


class AnalyzerError(Exception):
    """Root of every error the library raises on purpose."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InputError(AnalyzerError):
    """The user gave us something we cannot use: bad path, bad file, bad option value."""

    exit_code = 2


class SourceError(InputError):
    """A template source (file, folder, GGUF, stdin) could not be read or holds no usable template."""


class TemplateSyntaxError(SourceError):
    """The template text is not valid Jinja."""


class RenderError(AnalyzerError):
    """A render failed: the template raised, or ran past a time or size limit. The template (or the
    conversation given to it) is the user's input, so this is bad input."""

    exit_code = 2

    def __init__(self, message: str, *, raised_by_template: bool = False) -> None:
        super().__init__(message)
        # raise_exception() in the template is the template refusing an input: a capability, not a bug.
        self.raised_by_template = raised_by_template


class RenderLimitError(RenderError):
    """A render ran past the time or output-size limit."""


class AnalysisLimitError(RenderLimitError):
    """The work on a template as a whole ran past its time budget, or needed more memory than allowed.
    Unlike one failed render (a finding), this stops the analysis: nothing it found can be trusted."""


class DescriptionError(InputError):
    """A format description file is malformed or of an unknown schema version."""


class CorpusError(AnalyzerError):
    """The corpus could not be downloaded, verified or extracted."""


class ConversationError(InputError):
    """A conversation given to render is malformed (a message that is not an object, arguments that are
    not JSON, a tool result that answers no call)."""


class UnsupportedFormat(AnalyzerError):
    """The description has calls the output shape or a backend cannot express."""


class Inexpressible(UnsupportedFormat):
    """A part of the format cannot be written in a target language (a transformers response_template):
    ``parts`` holds (part, why) for each; the message names the first."""

    def __init__(self, template: str, parts: list[tuple[str, str]]) -> None:
        part, why = parts[0]
        more = f" (and {len(parts) - 1} more part{'s' if len(parts) > 2 else ''})" if len(parts) > 1 else ""
        super().__init__(f"{template}: {part} cannot be expressed in a response_template: {why}{more}")
        self.parts = parts


class MissingDependency(AnalyzerError):
    """An optional package a command needs is not installed."""


class CodegenError(AnalyzerError):
    """The parser's runtime cannot be copied into a standalone module (an import outside the standard
    library, a name defined twice across its modules)."""


class NoPlaceForTools(AnalyzerError):
    """The template writes the prompted format's tool text in neither a system turn nor a user turn."""


class RequestError(InputError):
    """A chat request (OpenAI's shape) that cannot be served; ``param`` names the field at fault."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class ServerUnreachable(AnalyzerError):
    """No llama-server answered at the URL (refused connection, unknown host, timeout)."""

    exit_code = 3


class ServerTimeout(ServerUnreachable):
    """The server took longer than the time allowed to connect or to send the next part of its reply."""


class ServerRefused(AnalyzerError):
    """The server answered with an HTTP error; the message carries llama-server's own text, ``status``
    its HTTP status."""

    exit_code = 4

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ServerReplyError(AnalyzerError):
    """The server answered, but not as llama-server does: a body that is not its JSON, a reply without
    text, a connection closed mid-body, a stream that ends before its last event."""

    exit_code = 4


class ReplyCut(AnalyzerError):
    """The reply stopped at n_predict: the completion is printed, and the exit code says it is cut."""

    exit_code = 5
