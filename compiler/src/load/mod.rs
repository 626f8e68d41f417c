//! Loading pack source text into a JSON value with a span for every node.
