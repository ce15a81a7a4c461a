"""The systems piiner is compared with: a checksummed regex (`regex`), and Presidio and Rampart (`systems`)."""
