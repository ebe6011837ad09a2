"""Neutral text helpers every layer may use: ``escape`` (names, paths and
messages shown safely: a terminal sequence never reaches the screen, bytes
that are not UTF-8 stay visible) and ``fmt`` (counts, sizes, lists). No
words of reports here: those are ``render``'s."""
