"""Raw-wire encoders of the update operations (RFC 4511 sections 4.6 to 4.9) and of Password
Modify (RFC 3062), built on `ldapwire`, for tests that drive writes faster or more precisely
than a library client does (many connections, requests pipelined, a kill while they are in
flight). Each function returns an encoded protocolOp for `ldapwire.message`."""

from ldapwire import boolean, enum, extended, octets, seq

MOD_ADD, MOD_DELETE, MOD_REPLACE = 0, 1, 2
PASSWORD_MODIFY_OID = "1.3.6.1.4.1.4203.1.11.1"


def _attribute(name, vals):
    """PartialAttribute ::= SEQUENCE { type, vals SET OF value }."""
    return seq(octets(name), seq(*[octets(v) for v in vals], tag=0x31))


def add(dn, attrs):
    """AddRequest [APPLICATION 8]; attrs: {type: [values]}."""
    return seq(octets(dn), seq(*[_attribute(n, v) for n, v in attrs.items()]), tag=0x68)


def modify(dn, changes):
    """ModifyRequest [APPLICATION 6]; changes: [(MOD_*, type, [values])] applied in order."""
    items = [seq(enum(op), _attribute(name, vals)) for op, name, vals in changes]
    return seq(octets(dn), seq(*items), tag=0x66)


def delete(dn):
    """DelRequest [APPLICATION 10] LDAPDN."""
    return octets(dn, tag=0x4A)


def modify_dn(dn, new_rdn, delete_old_rdn=True, new_superior=None):
    """ModifyDNRequest [APPLICATION 12]."""
    parts = [octets(dn), octets(new_rdn), boolean(delete_old_rdn)]
    if new_superior is not None:
        parts.append(octets(new_superior, tag=0x80))
    return seq(*parts, tag=0x6C)


def password_modify(user=None, old=None, new=None):
    """Password Modify extended request: PasswdModifyRequestValue ::= SEQUENCE {
    userIdentity [0] OPTIONAL, oldPasswd [1] OPTIONAL, newPasswd [2] OPTIONAL }."""
    parts = []
    for tag, value in ((0x80, user), (0x81, old), (0x82, new)):
        if value is not None:
            parts.append(octets(value, tag=tag))
    return extended(PASSWORD_MODIFY_OID, seq(*parts))
