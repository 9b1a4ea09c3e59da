"""template-analyzer: derive tool-call formats, parsers and grammars from LLM chat templates.

from analyzer import load_template, analyze, Parser, lower, to_grammar
description = analyze(load_template("model/tokenizer_config.json"))
message = Parser(description, tools).parse(model_output)
grammar = to_grammar(lower(description), tools, tool_choice="auto")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from analyzer.version import __version__ as __version__

# Each public name is imported from its module on first use: `template-analyzer --version` and the
# standalone pieces (analyzer.runtime, analyzer.errors) must not pay for the whole library.
_PUBLIC = {
    "AnalyzerError": "analyzer.errors",
    "FormatDescription": "analyzer.description",
    "Grammar": "analyzer.backends.gbnf",
    "InputError": "analyzer.errors",
    "Message": "analyzer.backends.parser",
    "OutputShape": "analyzer.runtime.shape",
    "Parser": "analyzer.backends.parser",
    "RenderError": "analyzer.errors",
    "SourceError": "analyzer.errors",
    "StreamParser": "analyzer.backends.parser",
    "Template": "analyzer.template",
    "analyze": "analyzer.analysis",
    "compile_template": "analyzer.render.engines",
    "dumps": "analyzer.description",
    "generate_parser_module": "analyzer.backends.parser.codegen",
    "load_template": "analyzer.sources",
    "loads": "analyzer.description",
    "lower": "analyzer.lower",
    "to_grammar": "analyzer.backends.gbnf",
}

__all__ = [
    "AnalyzerError",
    "FormatDescription",
    "Grammar",
    "InputError",
    "Message",
    "OutputShape",
    "Parser",
    "RenderError",
    "SourceError",
    "StreamParser",
    "Template",
    "analyze",
    "compile_template",
    "dumps",
    "generate_parser_module",
    "load_template",
    "loads",
    "lower",
    "to_grammar",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'analyzer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


if TYPE_CHECKING:
    from analyzer.analysis import analyze
    from analyzer.backends.gbnf import Grammar, to_grammar
    from analyzer.backends.parser import Message, Parser, StreamParser
    from analyzer.backends.parser.codegen import generate_parser_module
    from analyzer.description import FormatDescription, dumps, loads
    from analyzer.errors import AnalyzerError, InputError, RenderError, SourceError
    from analyzer.lower import lower
    from analyzer.render.engines import compile_template
    from analyzer.runtime.shape import OutputShape
    from analyzer.sources import load_template
    from analyzer.template import Template
