"""Views: everything derived from the ledger (SPEC §1.4, §8, §9) — reports and their
signatures, the settler that seals epochs, rebuild, explanations, a party's file."""
