"""The TravelPlanner sandbox: the database (official CSV layout or the generated world), its six tools, failure injection."""
