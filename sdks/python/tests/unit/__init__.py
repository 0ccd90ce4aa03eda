"""Pure unit tests: no server, no network, no httpx. They are ``unittest`` test cases so that
pytest runs them with the rest of the suite and ``python -m unittest`` runs them on interpreters
without pytest or httpx (CPython 3.9 and 3.13 from pyenv, in test_packaging)."""
