"""template-analyzer: derive tool-call formats, parsers and grammars from LLM chat templates.

from analyzer import load_template, analyze, Parser, lower, to_grammar
description = analyze(load_template("model/tokenizer_config.json"))
message = Parser(description, tools).parse(model_output)
grammar = to_grammar(lower(description), tools, tool_choice="auto")
"""

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

__version__ = "0.1.0"

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
