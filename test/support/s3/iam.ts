import { s3Error, type S3Failure } from "./xml.js"
import type { Target } from "./operation.js"

/**
 * IAM actions of the S3 API, as AWS authorizes them ("Actions, resources, and condition keys for Amazon S3" and the
 * "Permissions" section of each API reference page). The multipart write requests are all authorized by
 * s3:PutObject; aborting and listing uploads each have their own action; HeadObject needs s3:GetObject and
 * HeadBucket s3:ListBucket.
 */
const ACTIONS: Readonly<Record<string, ReadonlyArray<string>>> = {
  ListBuckets: ["s3:ListAllMyBuckets"],
  CreateBucket: ["s3:CreateBucket"],
  DeleteBucket: ["s3:DeleteBucket"],
  HeadBucket: ["s3:ListBucket"],
  GetBucketLocation: ["s3:GetBucketLocation"],
  ListObjects: ["s3:ListBucket"],
  ListObjectsV2: ["s3:ListBucket"],
  ListMultipartUploads: ["s3:ListBucketMultipartUploads"],
  PutObject: ["s3:PutObject"],
  CopyObject: ["s3:PutObject", "s3:GetObject"],
  GetObject: ["s3:GetObject"],
  HeadObject: ["s3:GetObject"],
  DeleteObject: ["s3:DeleteObject"],
  DeleteObjects: ["s3:DeleteObject"],
  CreateMultipartUpload: ["s3:PutObject"],
  UploadPart: ["s3:PutObject"],
  UploadPartCopy: ["s3:PutObject", "s3:GetObject"],
  CompleteMultipartUpload: ["s3:PutObject"],
  AbortMultipartUpload: ["s3:AbortMultipartUpload"],
  ListParts: ["s3:ListMultipartUploadParts"]
}

/** Request headers that need an action of their own on top of the operation's (PutObject with tags, with an ACL). */
const HEADER_ACTIONS: ReadonlyArray<readonly [header: string, operations: ReadonlyArray<string>, action: string]> = [
  ["x-amz-tagging", ["PutObject", "CreateMultipartUpload", "CopyObject"], "s3:PutObjectTagging"],
  ["x-amz-acl", ["PutObject", "CreateMultipartUpload", "CopyObject"], "s3:PutObjectAcl"]
]

/**
 * The IAM actions a request needs: those of its operation, plus s3:GetObjectVersion / s3:DeleteObjectVersion for a
 * request on one version, plus those its headers add. An operation the front end does not know needs an action no
 * allow list holds, so a restricted key is denied it.
 */
export const iamActions = (target: Target, headers: Readonly<Record<string, unknown>>): ReadonlyArray<string> => {
  const base = ACTIONS[target.operation] ?? [`s3:Unknown(${target.operation})`]
  const versioned = target.query.has("versionId")
    ? base.map((action) =>
        action === "s3:GetObject" ? "s3:GetObjectVersion" : action === "s3:DeleteObject" ? "s3:DeleteObjectVersion" : action
      )
    : base
  const extra = HEADER_ACTIONS.filter(([header, operations]) => headers[header] !== undefined && operations.includes(target.operation)).map(
    ([, , action]) => action
  )
  return [...versioned, ...extra]
}

/** The ARN of what a request addresses: the object for object operations, otherwise the bucket (or `*`). */
export const resourceArn = (target: Target): string =>
  target.bucket === undefined ? "*" : `arn:aws:s3:::${target.bucket}${target.key === undefined ? "" : `/${target.key}`}`

/** The allow list of each restricted access key; a key without one may do everything. */
export type Policies = ReadonlyMap<string, ReadonlySet<string>>

/** Whether `accessKeyId` may perform `action` (`s3:*` allows every action). */
export const allows = (policies: Policies, accessKeyId: string, action: string): boolean => {
  const allowed = policies.get(accessKeyId)
  return allowed === undefined || allowed.has("s3:*") || allowed.has(action)
}

/**
 * The AccessDenied S3 answers when the caller's policy does not allow an action, worded as AWS words it for an
 * IAM user without an identity-based policy statement allowing it; undefined when every action is allowed.
 */
export const denial = (policies: Policies, accessKeyId: string, target: Target, headers: Readonly<Record<string, unknown>>): S3Failure | undefined => {
  const missing = iamActions(target, headers).find((action) => !allows(policies, accessKeyId, action))
  if (missing === undefined) return undefined
  return s3Error(
    "AccessDenied",
    `User: arn:aws:iam::123456789012:user/${accessKeyId} is not authorized to perform: ${missing} on resource: "${resourceArn(target)}" because no identity-based policy allows the ${missing} action`
  )
}

/**
 * S3 hides whether a key exists from a caller who may not list the bucket: GetObject / HeadObject of a missing key
 * answers 403 AccessDenied instead of 404 without s3:ListBucket.
 */
export const hidesMissingKey = (policies: Policies, accessKeyId: string, target: Target): boolean =>
  (target.operation === "GetObject" || target.operation === "HeadObject") && !allows(policies, accessKeyId, "s3:ListBucket")
