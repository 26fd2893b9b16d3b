// What the client reads and writes on the wire: the portal's pages, lab codes and ids, answer sizes.

import Crypto
import ENModels
import Foundation
import SwiftProtobuf
import Testing

@testable import CWATool

@Suite("cwa wire formats")
struct WireFormatTests {
    @Test("the portal's pages: the CSRF token, an element's text with its children, the first offered authority")
    func portalPages() {
        let page = """
            <form><input type="hidden" name="csrf" value="tok-123"><select name="authority">
            <option value="">choose</option><option value="1.2.3">Gesundheitsamt A</option></select></form>
            <output id="teletan" class="teletan">R7KQ2MXP9T</output>
            <p class="error" id="rate-limited">One teleTAN per 30 seconds: please wait <strong>20</strong> seconds.</p>
            """

        #expect(PortalBrowserSession.attribute(after: #"name="csrf" value=""#, in: page) == "tok-123")
        #expect(PortalBrowserSession.element("teletan", in: page) == "R7KQ2MXP9T")
        #expect(
            PortalBrowserSession.element("rate-limited", in: page)
                == "One teleTAN per 30 seconds: please wait 20 seconds."
        )
        #expect(PortalBrowserSession.element("missing", in: page) == nil)
        #expect(PortalBrowserSession.firstOption(in: page) == "1.2.3")
        #expect(PortalBrowserSession.formEncoded("a b+c&d") == "a%20b%2Bc%26d")
    }

    @Test("lab result codes for PCR and rapid tests, and the ids a lab posts and a phone registers")
    func labCodes() {
        #expect(LabResult.allCases.map { $0.code(rapid: false) } == [nil, 1, 2, 3])
        #expect(LabResult.allCases.map { $0.code(rapid: true) } == [5, 6, 7, 8])
        let posted = LabID.posted(guid: "guid-1")
        #expect(posted.count == 64)
        #expect(LabID.registered(guid: "guid-1", rapid: false) == posted)
        #expect(LabID.registered(guid: "guid-1", rapid: true) != posted)
        #expect(LabID.registered(guid: "guid-1", rapid: true).count == 64)
    }

    @Test("an answer's size counts the status line, every header and the body")
    func wireSize() {
        let reply = Reply(
            status: 200,
            headers: [("Content-Length", "0"), ("cwa-saved-checkins", "0")],
            body: [],
            seconds: 0.01
        )

        // "HTTP/1.1 200 OK\r\n" 17 + "Content-Length: 0\r\n" 19 + "cwa-saved-checkins: 0\r\n" 23 + "\r\n" 2
        #expect(reply.wireSize == 61)
        #expect(reply.header("content-length") == "0")
    }
}
