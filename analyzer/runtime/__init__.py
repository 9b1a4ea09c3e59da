"""The parser's runtime: standard library only; generated parser modules copy it as is."""
