"""The storage contract: records, the adapter protocol."""
