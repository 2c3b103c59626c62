"""The Cognibrain profile: nine `cognibrain_*` tools at `/mcp/cognibrain` over the same transport."""
