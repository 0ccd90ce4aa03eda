"""Test support: the real Merx server the suite starts, a fault-injecting proxy in front of it,
a webhook receiver, and polling with a deadline."""
