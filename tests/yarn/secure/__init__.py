"""The Kerberized embedded cluster (`tfhadoop cluster up --secure`), tested end to end. Its tests
share one cluster (conftest.py: started once for this package, it takes minutes) and are split by
what they test: the client side, delegation tokens in containers, and jobs run on it."""
