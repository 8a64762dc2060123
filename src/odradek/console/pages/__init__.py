"""The console's pages, one module per area; each exports `routes`."""
