//! Writing messages: the encoding helpers under the one response encoder
//! ([`crate::outcome::respond`]), and [`ResponseSink`], where a search puts its entries.

use larch_proto::{LdapMessage, LdapResult, MessageId, ProtocolOp, SeqOf};

use crate::controls::ResponseControl;

/// Where a search writes its responses.
///
/// A search appends encoded messages to [`ResponseSink::buf`] and calls
/// [`ResponseSink::flush`] from time to time (every few entries or kilobytes). A sink for a
/// search that runs inline on the connection collects the whole answer and sends it with
/// the other responses of the same read; a sink for a long search running on its own
/// thread hands what it has to the connection's writer.
pub trait ResponseSink {
    /// The buffer to append encoded messages to.
    fn buf(&mut self) -> &mut Vec<u8>;

    /// Passes on what is in the buffer if it is worth sending. Returns false when the
    /// search must stop: the operation was abandoned or cancelled, or the connection is
    /// gone; the search then returns without writing its SearchResultDone.
    fn flush(&mut self) -> bool;

    /// True once the operation is abandoned or cancelled (checked between entries).
    fn stopped(&self) -> bool;

    /// True when the search should pause here and go on later
    /// ([`crate::search::run::Step::Paused`]): the connection could not take what was
    /// flushed (the client is not reading), or the search's turn on its worker thread is
    /// over. Asked after a flush and every few candidates. A sink that never pauses (the
    /// default) gets the whole answer in one step.
    fn should_pause(&mut self) -> bool {
        false
    }
}

/// A sink that only collects: for inline work and tests.
#[derive(Debug, Default)]
pub struct CollectSink {
    /// Everything written so far.
    pub out: Vec<u8>,
}

impl ResponseSink for CollectSink {
    fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }
    fn flush(&mut self) -> bool {
        true
    }
    fn stopped(&self) -> bool {
        false
    }
}

/// Builds the `ProtocolOp` of a response of kind `response_tag` (one of the
/// `larch_proto::op_tag` response tags other than BindResponse, SearchResultEntry,
/// SearchResultReference, ExtendedResponse and IntermediateResponse) from a result.
pub fn result_op(response_tag: u8, result: LdapResult<'_>) -> ProtocolOp<'_> {
    use larch_proto::op_tag::*;
    match response_tag {
        SEARCH_RESULT_DONE => ProtocolOp::SearchResultDone(result),
        MODIFY_RESPONSE => ProtocolOp::ModifyResponse(result),
        ADD_RESPONSE => ProtocolOp::AddResponse(result),
        DEL_RESPONSE => ProtocolOp::DelResponse(result),
        MODIFY_DN_RESPONSE => ProtocolOp::ModifyDnResponse(result),
        COMPARE_RESPONSE => ProtocolOp::CompareResponse(result),
        other => panic!("result_op: 0x{other:02x} is not a plain result response tag"),
    }
}

/// Appends a message carrying `op` and the response controls `controls`.
pub fn write_message(
    out: &mut Vec<u8>,
    message_id: MessageId,
    op: ProtocolOp<'_>,
    controls: &[ResponseControl],
) {
    let raw: Vec<_> = controls.iter().map(ResponseControl::as_control).collect();
    let msg = LdapMessage {
        message_id,
        op,
        controls: if raw.is_empty() {
            None
        } else {
            Some(SeqOf::from_items(&raw))
        },
    };
    msg.encode(out);
}
