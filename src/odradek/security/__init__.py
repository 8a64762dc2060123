"""Transport security: listeners' TLS contexts, SASL mechanisms (PLAIN, SCRAM) and connection principals.

The connection (server/connection.py) asks a `SaslAuthenticator` to run the SASL exchange before any
other API; handlers only ever see the authenticated principal.
"""
