import { describe, expect, it } from "@effect/vitest"
import { verifySigV4, type SignedRequest } from "./sigv4.js"

// Example requests and signatures from the Amazon S3 SigV4 documentation ("Examples: Signature calculations").
const AKID = "AKIAIOSFODNN7EXAMPLE"
const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
const options = { region: "us-east-1", secretFor: (id: string) => (id === AKID ? SECRET : undefined), now: new Date("2013-05-24T00:05:00Z") }
const auth = (signedHeaders: string, signature: string) =>
  `AWS4-HMAC-SHA256 Credential=${AKID}/20130524/us-east-1/s3/aws4_request,SignedHeaders=${signedHeaders},Signature=${signature}`
const getObject = (signature: string): SignedRequest => ({
  method: "GET",
  url: "/test.txt",
  headers: {
    host: "examplebucket.s3.amazonaws.com",
    range: "bytes=0-9",
    "x-amz-content-sha256": EMPTY_SHA256,
    "x-amz-date": "20130524T000000Z",
    authorization: auth("host;range;x-amz-content-sha256;x-amz-date", signature)
  }
})

const failureCode = (req: SignedRequest, opts = options): string => {
  try {
    verifySigV4(req, opts)
    return "ok"
  } catch (error) {
    return (error as Error).name
  }
}

describe("verifySigV4", () => {
  it("accepts the documented GET Object signature", () => {
    expect(verifySigV4(getObject("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"), options)).toEqual({
      accessKeyId: AKID,
      payloadHash: EMPTY_SHA256
    })
  })

  it("accepts the documented PUT Object signature (encoded path, Date header signed)", () => {
    const req: SignedRequest = {
      method: "PUT",
      url: "/test%24file.text",
      headers: {
        host: "examplebucket.s3.amazonaws.com",
        date: "Fri, 24 May 2013 00:00:00 GMT",
        "x-amz-date": "20130524T000000Z",
        "x-amz-storage-class": "REDUCED_REDUNDANCY",
        "x-amz-content-sha256": "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
        authorization: auth("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class", "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
      }
    }
    expect(failureCode(req)).toBe("ok")
  })

  it("accepts the documented list-objects signature (sorted, encoded query)", () => {
    const req: SignedRequest = {
      method: "GET",
      url: "/?prefix=J&max-keys=2",
      headers: {
        host: "examplebucket.s3.amazonaws.com",
        "x-amz-date": "20130524T000000Z",
        "x-amz-content-sha256": EMPTY_SHA256,
        authorization: auth("host;x-amz-content-sha256;x-amz-date", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
      }
    }
    expect(failureCode(req)).toBe("ok")
  })

  it("accepts the documented presigned URL and rejects it once expired", () => {
    const req: SignedRequest = {
      method: "GET",
      url:
        "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request" +
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host" +
        "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
      headers: { host: "examplebucket.s3.amazonaws.com" }
    }
    expect(failureCode(req)).toBe("ok")
    expect(failureCode(req, { ...options, now: new Date("2013-05-25T00:00:01Z") })).toBe("AccessDenied")
  })

  it("rejects a tampered signature, an unknown key, a wrong region, a stale date and a missing signature", () => {
    expect(failureCode(getObject("0".repeat(64)))).toBe("SignatureDoesNotMatch")
    expect(failureCode(getObject("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"), { ...options, secretFor: () => undefined })).toBe("InvalidAccessKeyId")
    expect(failureCode(getObject("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"), { ...options, region: "eu-west-1" })).toBe(
      "AuthorizationHeaderMalformed"
    )
    expect(failureCode(getObject("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"), { ...options, now: new Date("2013-05-24T01:00:00Z") })).toBe(
      "RequestTimeTooSkewed"
    )
    expect(failureCode({ method: "GET", url: "/test.txt", headers: { host: "examplebucket.s3.amazonaws.com" } })).toBe("AccessDenied")
  })
})
