"""Code the tests share, imported as ``helpers`` (``from helpers.golden import golden``).

pytest puts ``tests/`` on ``sys.path`` because the suite's root conftest lives there (the folder has
no ``__init__.py``), so this package imports from any test module without path tricks:

- ``golden``: the reviewed descriptions in golden/, the template compiled as it was analysed, and the
  model's output for an assistant message (a fresh render, cut where the generation prompt ends).
- ``roundtrip``: the round-trip tools, cases and model outputs the parser tests share.
- ``grammar``: the corpus cases the grammar tests share (tools, calls, where the calls are in an output,
  the texts each corpus check asks a grammar to take or refuse).
- ``gbnf_check``: whether a GBNF grammar accepts a text, asked of llguidance.
- ``llama_gbnf``: the same, asked of llama.cpp's own engine (its test-gbnf-validator).
- ``cli``: the command line run through its real entry point.
- ``stand_in``: a local stand-in for llama-server's /completion endpoint (the ``stand_in`` fixture).
- ``samples``: llama.cpp's sample outputs and the tools their tests declared.
- ``llama_chat_cases``: every parse expectation of llama.cpp's tests/test-chat.cpp (read from the pinned
  sdist at test time) as a case, and a case run through our parser; ``cpp_eval`` is the C++ reader it uses.
- ``toy``: toy chat templates for the detector tests, and the analysis of one.
"""
